"""The trainer's entries in the log: the registry lock and one event per change.

Every registry, run and trigger write is a row change plus an event appended in the same
transaction, under the registry lock. The lock and the append are the same for all of
them, so they live here.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from events.model import EventMetadata, NewEvent, RecordedEvent
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


def record(
    store: EventStore, conn: Connection, stream_id: str, event_type: str,
    payload: dict[str, Any], actor: str, specialist: str | None = None,
    adapter_version: str | None = None,
) -> RecordedEvent:
    """Append one server event inside ``conn``'s transaction and return it as stored."""
    new = NewEvent(stream_id=stream_id, type=event_type, payload=payload,
                   metadata=EventMetadata(actor=actor, specialist=specialist,
                                          adapter_version=adapter_version))
    return store.append([new], conn=conn)[0].event


def specialist_stream(name: str) -> str:
    return f"specialist:{name}"


def run_stream(run_id: str) -> str:
    return f"training_run:{run_id}"
