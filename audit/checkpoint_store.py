"""The checkpoints the server signed (``audit_checkpoints``), and their outbox feed.

Each row is a signed note kept verbatim plus its fields for queries. ``position`` is
gapless and in commit order (allocated under a lock, like the event log's), so the relay
publishes the table to ``<prefix>.checkpoints`` as it publishes the log: a checkpoint and
its intent to publish commit together.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine, RowMapping

from audit.checkpoints import TIME_FORMAT, Checkpoint, SignedCheckpoint
from audit.tables import audit_checkpoints as ac
from events.kafka_io import encode_json
from events.relay import OutboxMessage, TableFeed
from events.relay_wake import CHECKPOINTS, notify_outbox
from kernel.clock import utc
from kernel.db import reading
from kernel.errors import NotFound
from kernel.sql import head, lock_writers

CHECKPOINT_LOCK_KEY = 0x484350434B50  # "HCPCKP"; the event log uses "HCPLOG"


class CheckpointNotFound(NotFound):
    pass


@dataclass(frozen=True)
class StoredCheckpoint:
    position: int  # in audit_checkpoints, not in the log: the log's is checkpoint.size
    checkpoint: Checkpoint
    note: str
    key_id: str

    @property
    def signed(self) -> SignedCheckpoint:
        return SignedCheckpoint(self.checkpoint, self.note)

    def to_json(self) -> dict[str, Any]:
        cp = self.checkpoint
        return {"position": self.position, "origin": cp.origin, "tree_size": cp.size,
                "root": base64.b64encode(cp.root).decode(), "chain_head": cp.chain_head,
                "time": cp.timestamp.strftime(TIME_FORMAT), "key_id": self.key_id, "note": self.note}


class CheckpointStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def add_in(self, conn: Connection, signed: SignedCheckpoint, key_id: int) -> StoredCheckpoint:
        """Store a signed checkpoint inside ``conn``'s transaction, at the next position."""
        lock_writers(conn, CHECKPOINT_LOCK_KEY)
        cp = signed.checkpoint
        row = {"position": head(conn, ac.c.position) + 1, "origin": cp.origin, "tree_size": cp.size,
               "root": cp.root, "chain_head": cp.chain_head, "signed_at": cp.timestamp,
               "key_id": f"{key_id:08x}", "note": signed.note}
        conn.execute(ac.insert().values(**row))
        notify_outbox(conn, CHECKPOINTS)  # the relay publishes it on commit
        return stored(row)

    def latest(self, conn: Connection | None = None) -> StoredCheckpoint | None:
        with reading(self.engine, conn) as c:
            row = c.execute(select(ac).order_by(ac.c.position.desc()).limit(1)).first()
        return stored(row._mapping) if row else None

    def get(self, position: int, conn: Connection | None = None) -> StoredCheckpoint:
        with reading(self.engine, conn) as c:
            row = c.execute(select(ac).where(ac.c.position == position)).first()
        if row is None:
            raise CheckpointNotFound(f"no checkpoint {position}")
        return stored(row._mapping)

    def page(self, after: int = 0, limit: int = 100) -> list[StoredCheckpoint]:
        """Checkpoints after ``after`` (a checkpoint position), oldest first."""
        query = select(ac).where(ac.c.position > after).order_by(ac.c.position).limit(limit)
        with self.engine.connect() as conn:
            return [stored(r._mapping) for r in conn.execute(query)]

    def all(self) -> list[StoredCheckpoint]:
        with self.engine.connect() as conn:
            return [stored(r._mapping) for r in conn.execute(select(ac).order_by(ac.c.position))]


def stored(row: RowMapping | dict[str, Any]) -> StoredCheckpoint:
    checkpoint = Checkpoint(row["origin"], int(row["tree_size"]), bytes(row["root"]), row["chain_head"],
                            utc(row["signed_at"]))
    return StoredCheckpoint(int(row["position"]), checkpoint, row["note"], row["key_id"])


def checkpoint_message(row: RowMapping) -> OutboxMessage:
    """Key = the log's origin (one partition keeps checkpoints in order); value = its JSON."""
    found = stored(row)
    return OutboxMessage(found.position, found.checkpoint.origin.encode(), encode_json(found.to_json()),
                         (("key_id", found.key_id.encode()),))


def checkpoints_table_feed(engine: Engine, topic: str) -> TableFeed:
    return TableFeed(engine, ac, "position", topic, checkpoint_message, wake=CHECKPOINTS)
