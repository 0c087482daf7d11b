"""The trainer's entries in the log: the registry lock, one typed event per change, and
the streams they go on.

Every registry, run and trigger write is an event appended and projected into its rows
in one transaction (``write``), under the registry lock. The lock and the append are the
same for all of them, so they live here.
"""

from __future__ import annotations

from sqlalchemy.engine import Connection

from events.model import EventMetadata
from events.projections.model import ProjectionSet
from events.projections.sql import Sources, append_in, write_in
from events.server_events import E, Logged
from events.store import EventStore
from kernel.sql import lock_writers

REGISTRY_LOCK_KEY = 0x48435052454749  # "HCPREGI"; any constant shared by all writers


def lock_registry(conn: Connection) -> None:
    """Serialise registry writers until this transaction ends.

    Registry writes read before they write: the next version is max+1, an alias move
    records the target it replaces, a firing checks its exactly-once key. Under READ
    COMMITTED two writers could read the same state; a transaction-scoped advisory lock
    makes them take turns (each statement after it sees everything committed before).
    It is always taken before the event log's own lock, so the two never deadlock.
    SQLite needs nothing: the engine's BEGIN IMMEDIATE already holds the write lock.
    """
    lock_writers(conn, REGISTRY_LOCK_KEY)


def write(store: EventStore, conn: Connection, projections: ProjectionSet, stream_id: str,
          event: E, actor: str, specialist: str | None = None,
          adapter_version: str | None = None, sources: Sources | None = None) -> Logged[E]:
    """Append one typed server event inside ``conn``'s transaction and apply its
    projectors (``projections``: the writer's package's): the rows come from the event."""
    return write_in(conn, store, projections, stream_id, event,
                    EventMetadata(actor=actor, specialist=specialist, adapter_version=adapter_version),
                    sources)


def append(store: EventStore, conn: Connection, projections: ProjectionSet, stream_id: str,
           event: E, actor: str, specialist: str | None = None,
           adapter_version: str | None = None) -> Logged[E]:
    """``write`` without the projectors, which the caller applies later in the same
    transaction (``events.projections.sql.project_in``): when its rows name rows that later
    events of the transaction write."""
    return append_in(conn, store, projections, stream_id, event,
                     EventMetadata(actor=actor, specialist=specialist, adapter_version=adapter_version))


def specialist_stream(name: str) -> str:
    return f"specialist:{name}"


def base_model_stream(name: str) -> str:
    return f"base_model:{name}"


def run_stream(run_id: str) -> str:
    return f"training_run:{run_id}"
