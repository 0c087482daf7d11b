"""Every table a projection of the log: what the log did not yet hold is recorded once.

DATA MIGRATION 1: the four specialists migration 0003 created had no event and the time
of the migration as their creation time; it becomes a constant (1970-01-01, "before the
log"), so the specialists' projection can start from the same seed in every database.

DATA MIGRATION 2: a manifest frozen before ``dataset.frozen`` existed was named in the
log only by its content hash (in its ``trigger.fired``). One ``dataset.frozen`` event per
such manifest now records its reward ids, cut and hashes as its row holds them, with the
row's creation time (``frozen_at``) and actor ``migration:0016``; its projector rebuilds
the rest from the chained reward records, and the audit still holds the content hash to
the one the firing froze. No event is changed: these are appended after the others.

Revision ID: 0016
Revises: 0015
"""

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

from events.model import EventMetadata, NewEvent
from events.sql_store import SqlEventStore
from kernel.clock import utc
from kernel.db import append_only_ddl

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

SEEDED_AT = datetime(1970, 1, 1, tzinfo=UTC)


def upgrade() -> None:
    conn = op.get_bind()
    seeded = sa.text("UPDATE specialists SET created_at = :at WHERE created_by = 'migration:0003'") \
        .bindparams(sa.bindparam("at", SEEDED_AT, type_=sa.DateTime(timezone=True)))
    _with_triggers_lifted(conn, "specialists", lambda: conn.execute(seeded))
    _record_legacy_manifests(conn)


def _record_legacy_manifests(conn: sa.Connection) -> None:
    frozen = {_json(payload).get("manifest_id") for payload in conn.execute(sa.text(
        "SELECT payload FROM events WHERE type = 'dataset.frozen'")).scalars()}
    rows = conn.execute(sa.text(
        "SELECT manifest_id, specialist, cut_from, cut_to, reward_ids, examples_sha256, content_hash, "
        "created_at FROM dataset_manifests ORDER BY created_at, manifest_id")).all()
    batch = [NewEvent(
        stream_id=f"specialist:{r.specialist}", type="dataset.frozen", event_id=uuid.uuid4(),
        payload={"manifest_id": r.manifest_id, "specialist": r.specialist, "cut_from": r.cut_from,
                 "cut_to": r.cut_to, "reward_ids": [str(i) for i in _json(r.reward_ids)],
                 "examples_sha256": r.examples_sha256, "content_hash": r.content_hash,
                 "frozen_at": utc(_time(r.created_at)).isoformat()},
        metadata=EventMetadata(actor="migration:0016", specialist=r.specialist))
        for r in rows if r.manifest_id not in frozen]
    if batch:
        SqlEventStore(conn.engine).append(batch, conn=conn)


def _json(value: Any) -> Any:
    """A JSON column read through text SQL: text on SQLite, decoded on PostgreSQL."""
    return json.loads(value) if isinstance(value, str) else value


def _time(value: Any) -> datetime:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def _with_triggers_lifted(conn: sa.Connection, table: str, change: Callable[[], object]) -> None:
    """Run ``change`` with the table's append-only triggers out of the way (the schema
    owner may; the triggers are back before the migration commits)."""
    postgres = conn.dialect.name == "postgresql"
    if postgres:
        conn.execute(sa.text(f"ALTER TABLE {table} DISABLE TRIGGER {table}_no_update_delete"))
    else:
        for name in (f"{table}_no_update", f"{table}_no_delete"):
            conn.execute(sa.text(f"DROP TRIGGER IF EXISTS {name}"))
    change()
    if postgres:
        conn.execute(sa.text(f"ALTER TABLE {table} ENABLE TRIGGER {table}_no_update_delete"))
    else:
        for statement in append_only_ddl(table, "sqlite"):
            conn.execute(sa.text(statement))


def downgrade() -> None:
    # The events stay (the log is append-only); the projections ignore nothing they add.
    pass
