"""The Merkle tree builder's own small composition root, for the relay's child process
(cli/tree_process.py).

``hcp.bootstrap`` imports the module of every service: about 2 s of CPU, which the
child spent at each relay start, on the cores the relay needs for its backlog (the CPU
account of bench/ingest.py showed it inside end to end). The builder needs the log and
the node store only, about 0.7 s. ``Container.tree_builder`` builds the same builder on
the container's shared engine and store.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from audit.builder import TreeBuilder
from events.sql_store import SqlEventStore
from hcp.settings import Settings, get_settings
from kernel.db import make_engine


def tree_builder_alone(settings: Settings | None = None) -> tuple[TreeBuilder, Engine]:
    """A tree builder on an engine of its own (the caller disposes of it). The schema is
    not checked here: the relay that starts this child has checked it."""
    settings = settings or get_settings()
    engine = make_engine(settings.resolved_database_url)
    return TreeBuilder(engine, SqlEventStore(engine)), engine
