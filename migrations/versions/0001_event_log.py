"""The event log: events (append-only, hash-chained), follower checkpoints, API keys.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

from kernel.db import append_only_ddl

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("position", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("event_id", sa.Uuid, nullable=False),
        sa.Column("stream_id", sa.String(200), nullable=False),
        sa.Column("stream_seq", sa.BigInteger, nullable=False),
        sa.Column("type", sa.String(200), nullable=False),
        sa.Column("schema_version", sa.Integer, nullable=False),
        sa.Column("payload", sa.JSON, nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True)),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(200)),
        sa.Column("tenant", sa.String(200)),
        sa.Column("specialist", sa.String(100)),
        sa.Column("adapter_version", sa.String(200)),
        sa.Column("contract", sa.String(200)),
        sa.Column("causation_id", sa.Uuid),
        sa.Column("correlation_id", sa.Uuid),
        sa.Column("payload_digest", sa.String(64), nullable=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("position", name="pk_events"),
        sa.UniqueConstraint("event_id", name="uq_events_event_id"),
        sa.UniqueConstraint("stream_id", "stream_seq", name="uq_events_stream_seq"),
    )
    op.create_index("ix_events_type", "events", ["type"])
    op.create_table(
        "checkpoints",
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("position", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_checkpoints"),
    )
    op.create_table(
        "api_keys",
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("secret_sha256", sa.String(64), nullable=False),
        sa.Column("scopes", sa.JSON, nullable=False),
        sa.Column("label", sa.String(200)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key_id", name="pk_api_keys"),
    )
    for statement in append_only_ddl("events", op.get_bind().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    op.drop_table("api_keys")
    op.drop_table("checkpoints")
    op.drop_table("events")
