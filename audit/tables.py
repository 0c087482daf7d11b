"""SQL tables of the audit: the Merkle tree's nodes and the checkpoints the server signed.

Both append-only (database triggers refuse UPDATE and DELETE, as on the events table).
``merkle_nodes`` is a projection of the event log (rebuildable from the events' chain
hashes); ``audit_checkpoints`` holds each signed note verbatim, with its fields beside it
for queries, and a gapless ``position`` so the relay can publish it like the log itself.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    LargeBinary,
    SmallInteger,
    String,
    Table,
    Text,
)

from kernel.db import metadata

merkle_nodes = Table(
    "merkle_nodes",
    metadata,
    Column("level", SmallInteger, primary_key=True, autoincrement=False),  # 0 = leaf hashes
    Column("idx", BigInteger, primary_key=True, autoincrement=False),  # "index" is reserved in SQL
    Column("hash", LargeBinary(32), nullable=False),  # raw SHA-256: half the size of hex
    CheckConstraint("level >= 0 AND level < 64", name="level"),
    CheckConstraint("idx >= 0", name="idx"),
)

audit_checkpoints = Table(
    "audit_checkpoints",
    metadata,
    # Gapless and in commit order (allocated under a lock): the relay tails it to Kafka.
    Column("position", BigInteger, primary_key=True, autoincrement=False),
    Column("origin", String(200), nullable=False),
    Column("tree_size", BigInteger, nullable=False, index=True),
    Column("root", LargeBinary(32), nullable=False),
    Column("chain_head", String(64), nullable=False),
    Column("signed_at", DateTime(timezone=True), nullable=False),
    Column("key_id", String(8), nullable=False),  # which key signed it (keys rotate)
    Column("note", Text, nullable=False),  # the signed note: THE checkpoint, verbatim
)
