"""An adapter version's status after registration: a new row and event per change.

Shared by the registry (promote, reject) and the aliases (a rollback marks the version
it leaves ``rolled_back``), so neither has to import the other.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.engine import Connection

from events.store import EventStore
from trainer.journal import specialist_stream, write
from trainer.registry.events import AdapterStatusChanged
from trainer.registry.projections import ADAPTER_PROJECTIONS
from trainer.registry.tables import adapter_status_changes, adapter_versions


def effective_status_in(conn: Connection, adapter_id: str) -> str | None:
    """The latest status change, else the status it was registered with (None: no such adapter)."""
    latest = conn.execute(
        select(adapter_status_changes.c.status)
        .where(adapter_status_changes.c.adapter_id == adapter_id)
        .order_by(adapter_status_changes.c.position.desc()).limit(1)).scalar()
    if latest is not None:
        return str(latest)
    registered = conn.execute(select(adapter_versions.c.status)
                              .where(adapter_versions.c.adapter_id == adapter_id)).scalar()
    return None if registered is None else str(registered)


def change_status_in(conn: Connection, store: EventStore, adapter_id: str, specialist: str,
                     status: str, previous: str | None, actor: str, reason: str) -> None:
    """Record ``status`` for the adapter (an ``adapter.status_changed`` event and a row)."""
    write(store, conn, ADAPTER_PROJECTIONS, specialist_stream(specialist), AdapterStatusChanged(
        adapter_id=adapter_id, status=status, previous_status=previous, reason=reason),
        actor, specialist=specialist, adapter_version=adapter_id)
