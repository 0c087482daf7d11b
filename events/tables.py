"""SQL tables of the event log (SQLAlchemy Core, on the shared metadata)."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    DateTime,
    Index,
    Integer,
    String,
    Table,
    UniqueConstraint,
    Uuid,
)

from kernel.db import metadata

events = Table(
    "events",
    metadata,
    # Gapless, in commit order: allocated under a lock by the store, never by a sequence
    # (sequences hand out numbers at insert time, so a reader could see 7 before 6 commits).
    Column("position", BigInteger, primary_key=True, autoincrement=False),
    Column("event_id", Uuid, nullable=False, unique=True),
    Column("stream_id", String(200), nullable=False),
    Column("stream_seq", BigInteger, nullable=False),
    Column("type", String(200), nullable=False, index=True),
    Column("schema_version", Integer, nullable=False),
    # JSON, not JSONB: JSONB rewrites numbers and key order, and the digest must be
    # reproducible from what we read back.
    Column("payload", JSON, nullable=False),
    Column("occurred_at", DateTime(timezone=True)),
    Column("recorded_at", DateTime(timezone=True), nullable=False),
    Column("actor", String(200)),  # stamped from the API key that wrote it
    Column("tenant", String(200)),  # stamped from the key (an operator key may name one)
    Column("claimed_actor", String(200)),  # what the client said the actor was, unchecked
    Column("specialist", String(100)),
    Column("adapter_version", String(200)),
    Column("contract", String(200)),
    Column("causation_id", Uuid),
    Column("correlation_id", Uuid),
    Column("payload_digest", String(64), nullable=False),
    Column("prev_hash", String(64), nullable=False),
    Column("hash", String(64), nullable=False),
    UniqueConstraint("stream_id", "stream_seq", name="uq_events_stream_seq"),
    # A tenant key reads "tenant = T AND position > after ORDER BY position".
    Index("ix_events_tenant_position", "tenant", "position"),
)

# Where each log follower (the Kafka relay, embedded consumers) has got to.
checkpoints = Table(
    "checkpoints",
    metadata,
    Column("name", String(200), primary_key=True),
    Column("position", BigInteger, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)
