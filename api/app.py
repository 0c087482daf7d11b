"""The FastAPI application: wiring only, no business logic."""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.docs_ui import router as docs_router
from api.errors import install_error_handlers
from api.gate import RequestGate
from api.metrics import Metrics
from api.routes import ROUTERS
from console.router import router as console_router
from hcp.bootstrap import Container, bootstrap
from kernel.collector import settle_garbage_collector


def create_app(container: Container | None = None, *, served: bool = False) -> FastAPI:
    """Build the app; without a container, the lifespan bootstraps one from settings.
    ``served``: the app is the process's whole life (`hcp serve`): tune its collector."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = container is None
        app.state.container = container or bootstrap()
        if served:
            settle_garbage_collector()
            sys.setswitchinterval(SWITCH_INTERVAL_S)
            app.state.container.warm_chat()  # /healthz is not ready until chat can answer
        yield
        if owned:
            app.state.container.close()

    # docs_url/redoc_url off: FastAPI's pages load from a CDN; api/docs_ui.py serves them offline.
    app = FastAPI(title="HCP contract and versioning server", version="0.1.0", lifespan=lifespan,
                  docs_url=None, redoc_url=None)
    app.state.metrics = Metrics()
    if container is not None:
        app.state.container = container
    install_error_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    app.include_router(docs_router)  # /docs, /redoc
    app.include_router(console_router)  # the pages under /console (and /, /ui, /dashboard)
    # Added before the timing middleware, so it runs inside it: refusals are timed too.
    app.add_middleware(RequestGate)
    app.add_middleware(RequestTimer)
    return app


# A thread back from a database round trip (or the event loop, woken by a socket) waits
# for the GIL until the thread holding it has run this long; the default is 5 ms. Under
# load the one waiting is often the group commit's leader, holding the log's writer lock
# for every writer while another request parses its body: its transaction makes a dozen
# such waits (bench/probe_serve.py counts them). 0.5 ms bounds each, for a few more
# thread switches when threads compete.
SWITCH_INTERVAL_S = 0.0005


def create_served_app() -> FastAPI:
    """The factory each `hcp serve --workers N` process calls."""
    return create_app(served=True)


class RequestTimer:
    """Observes each HTTP request's latency by route, method and status (a pure ASGI
    middleware: ``@app.middleware("http")`` runs every request through a task group and
    memory streams, which cost as much as a small route)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), 500

        async def watched(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            route = scope.get("route")
            scope["app"].state.metrics.request_seconds.labels(
                getattr(route, "path", "unmatched"), scope["method"], str(status)
            ).observe(time.perf_counter() - started)
