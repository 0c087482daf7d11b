"""Readiness and liveness (unauthenticated, for load balancers and orchestrators) and
Prometheus metrics (an operator key with ``metrics:read``: the series describe the whole
log and every tenant's traffic, the log's head and append count among them, which a
tenant's own ``head`` hides)."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from api.deps import ContainerDep, MetricsDep, MetricsRead
from api.responses import RETRY_AFTER, SECURED
from api.schemas.health import DependencyOut, HealthOut
from hcp.health import Probe

router = APIRouter(tags=["health"])
# /metrics answers text, so FastAPI would document its errors as text too: they are JSON.
JSON_ERRORS = {status: {"description": entry["description"], **({"headers": entry["headers"]}
                                                                 if "headers" in entry else {}),
                        "content": {"application/json": {"schema": {
                            "$ref": "#/components/schemas/ErrorOut"}}}}
               for status, entry in SECURED.items()}


@router.get("/healthz", response_model=HealthOut, responses={
    503: {"model": HealthOut, "description": "A dependency is down (see checks)",
          "headers": RETRY_AFTER}})
def healthz(container: ContainerDep) -> Response:
    """Readiness: 200 when every dependency answers within the timeout (the database always,
    Kafka and Redis when configured) and the chat backend's decoding thread, once started,
    runs; 503 naming what does not."""
    return _answer(container, [*container.health.check(), *container.thread_probes()])


@router.get("/livez", response_model=HealthOut, responses={
    503: {"model": HealthOut, "description": "A thread of this process is down (see checks)",
          "headers": RETRY_AFTER}})
def livez(container: ContainerDep) -> Response:
    """Liveness: 200 while this process's own serving threads run (the chat backend's
    decoding thread, once started); 503 when one stopped or is stuck, so the process should
    be restarted. Dependencies are not probed: an outage of the database is no reason to."""
    return _answer(container, container.thread_probes())


def _answer(container: ContainerDep, probes: list[Probe]) -> Response:
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
          "description": "Prometheus text exposition format"}, **JSON_ERRORS})
def metrics(container: ContainerDep, registry: MetricsDep, _: MetricsRead) -> Response:
    """Prometheus text format; an operator key with metrics:read (scrapers send it as a
    bearer token)."""
    registry.log_head.set(container.store.head())
    return Response(generate_latest(registry.registry), media_type=CONTENT_TYPE_LATEST)
