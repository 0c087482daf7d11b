"""Liveness and Prometheus metrics (unauthenticated, as scrapers expect)."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from api.deps import ContainerDep, MetricsDep
from api.responses import DESCRIPTIONS, RETRY_AFTER
from api.schemas.health import DependencyOut, HealthOut

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=HealthOut, responses={
    503: {"model": HealthOut, "description": "A dependency is down (see checks)",
          "headers": RETRY_AFTER}})
def healthz(container: ContainerDep) -> Response:
    """200 when every dependency answers within the timeout: the database always, Kafka and
    Redis when configured; 503 naming the one that does not."""
    probes = container.health.check()
    up = all(p.ok for p in probes)
    body = HealthOut(
        status="ok" if up else "unavailable",
        mode="embedded" if container.settings.embedded else "services",
        checks={p.name: DependencyOut(status="ok" if p.ok else "down", latency_ms=p.latency_ms,
                                      error=p.error) for p in probes})
    headers = None if up else {"Retry-After": str(container.settings.unavailable_retry_after_s)}
    return JSONResponse(body.model_dump(mode="json"), 200 if up else 503, headers=headers)


@router.get("/metrics", response_class=PlainTextResponse, responses={
    200: {"content": {"text/plain": {"schema": {"type": "string"}}},
          "description": "Prometheus text exposition format"},
    503: {"description": DESCRIPTIONS[503], "headers": RETRY_AFTER,
          "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}}})
def metrics(container: ContainerDep, registry: MetricsDep) -> Response:
    """Prometheus text format."""
    registry.log_head.set(container.store.head())
    return Response(generate_latest(registry.registry), media_type=CONTENT_TYPE_LATEST)
