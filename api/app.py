"""The FastAPI application: wiring only, no business logic."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request, Response

from api.errors import install_error_handlers
from api.gate import RequestGate
from api.metrics import Metrics
from api.routes import ROUTERS
from console.router import router as console_router
from hcp.bootstrap import Container, bootstrap


def create_app(container: Container | None = None) -> FastAPI:
    """Build the app; without a container, the lifespan bootstraps one from settings."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = container is None
        app.state.container = container or bootstrap()
        yield
        if owned:
            app.state.container.close()

    app = FastAPI(title="HCP contract and versioning server", version="0.1.0", lifespan=lifespan)
    app.state.metrics = Metrics()
    if container is not None:
        app.state.container = container
    install_error_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    app.include_router(console_router)  # the pages under /console (and /, /ui, /dashboard)
    # Added before the timing middleware, so it runs inside it: refusals are timed too.
    app.add_middleware(RequestGate)

    @app.middleware("http")
    async def time_requests(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        started = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        app.state.metrics.request_seconds.labels(
            getattr(route, "path", "unmatched"), request.method, str(response.status_code)
        ).observe(time.perf_counter() - started)
        return response

    return app
