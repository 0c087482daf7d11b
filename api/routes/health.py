"""Liveness and Prometheus metrics (unauthenticated, as scrapers expect)."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from api.deps import ContainerDep, MetricsDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz(container: ContainerDep) -> dict:
    """200 when the database answers."""
    with container.engine.connect() as conn:
        conn.execute(text("SELECT 1"))
    return {"status": "ok", "mode": "embedded" if container.settings.embedded else "services"}


@router.get("/metrics")
def metrics(container: ContainerDep, registry: MetricsDep) -> Response:
    """Prometheus text format."""
    registry.log_head.set(container.store.head())
    return Response(generate_latest(registry.registry), media_type=CONTENT_TYPE_LATEST)
