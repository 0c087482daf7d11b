"""The composition root: the one place engines, stores, producers and consumers are built.

Nothing is built at import time; entry points (the API lifespan, CLI commands, workers)
call ``bootstrap()`` and pass the pieces down.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from sqlalchemy.engine import Engine

from contract.service import ContractService
from events.store import EventStore, SqlEventStore
from hcp.db import make_engine
from hcp.metrics import Metrics
from hcp.migrate import require_schema_at_head
from hcp.settings import Settings, get_settings


@dataclass
class Container:
    settings: Settings
    engine: Engine
    metrics: Metrics = field(default_factory=Metrics)

    @cached_property
    def store(self) -> EventStore:
        return SqlEventStore(self.engine)

    @cached_property
    def contracts(self) -> ContractService:
        return ContractService(self.engine, self.store)

    def close(self) -> None:
        self.engine.dispose()


def bootstrap(settings: Settings | None = None, check_schema: bool = True) -> Container:
    settings = settings or get_settings()
    engine = make_engine(settings.resolved_database_url)
    if check_schema:
        require_schema_at_head(engine)
    return Container(settings=settings, engine=engine)
