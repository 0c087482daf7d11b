"""The app of `hcp gateway`: the chat routes alone, for a process that only serves chats.

The same routes, keys, gate and recording as `hcp serve` (the exchanges go through the
same ingest path into the same database); what differs is what runs beside them: the
gateway's CPU or GPU time does not compete with the log's API, and several gateways
can sit behind one load balancer, each with its own adapter pool.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from api.errors import install_error_handlers
from api.gate import RequestGate
from api.metrics import Metrics
from api.routes import chat, health
from hcp.bootstrap import Container


def create_gateway_app(container: Container) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        container.close()

    app = FastAPI(title="HCP chat gateway", version="0.1.0", lifespan=lifespan)
    app.state.container, app.state.metrics = container, Metrics()
    install_error_handlers(app)
    app.include_router(health.router)
    app.include_router(chat.router)
    app.add_middleware(RequestGate)
    return app
