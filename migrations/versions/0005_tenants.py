"""Tenants and key lifecycle: keys bound to a tenant, expiring and revocable; events keep
the client's claimed actor beside the stamped one; rewards carry their subject's tenant;
dry runs become jobs with progress.

Revision ID: 0005
Revises: 0007 (0005 was numbered before 0007 landed on main; it runs after it)
"""

import sqlalchemy as sa
from alembic import op

from kernel.db import append_only_ddl

revision = "0005"
down_revision = "0008"  # landed after 0008 (semantics); numbers are names, the chain is the order
branch_labels = None
depends_on = None

# The tenant of an existing reward is the tenant of its subject's events: the events of
# its stream between its first and last position (a subject is a contiguous run of one
# stream). A subject whose events disagree (written before keys had tenants) gets NULL,
# which only operator keys can read. Plain SQL, the same on PostgreSQL and SQLite.
FILL_REWARD_TENANTS = """
UPDATE reward_records SET tenant = (
    SELECT CASE WHEN count(DISTINCT coalesce(e.tenant, '')) = 1 THEN max(e.tenant) END
    FROM events e
    WHERE e.stream_id = reward_records.stream_id
      AND e.position BETWEEN reward_records.first_position AND reward_records.last_position
)
"""


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    _keys()
    op.add_column("events", sa.Column("claimed_actor", sa.String(200)))
    # A tenant key's feed reads "tenant = T AND position > after ORDER BY position".
    op.create_index("ix_events_tenant_position", "events", ["tenant", "position"])
    _reward_tenants(dialect)
    _dry_run_jobs()


def _keys() -> None:
    for column in (sa.Column("tenant", sa.String(200)),
                   sa.Column("expires_at", sa.DateTime(timezone=True)),
                   sa.Column("last_used_at", sa.DateTime(timezone=True)),
                   sa.Column("revoked_at", sa.DateTime(timezone=True)),
                   sa.Column("revoked_by", sa.String(200)),
                   sa.Column("revoked_reason", sa.Text)):
        op.add_column("api_keys", column)


def _reward_tenants(dialect: str) -> None:
    op.add_column("reward_records", sa.Column("tenant", sa.String(200)))
    # Data migration on an append-only table: its UPDATE/DELETE guard is lifted for this
    # one statement and put back before the migration ends. On PostgreSQL it all happens
    # in the migration's transaction (DDL is transactional there), so no other writer
    # ever sees the table unguarded; on SQLite the engine holds the write lock meanwhile.
    for trigger in _guard_triggers("reward_records", dialect):
        op.execute(f"DROP TRIGGER {trigger}" + (" ON reward_records" if dialect == "postgresql" else ""))
    op.execute(FILL_REWARD_TENANTS)
    for statement in append_only_ddl("reward_records", dialect):
        op.execute(statement)
    op.create_index("ix_reward_records_tenant", "reward_records", ["tenant", "position"])


def _guard_triggers(table: str, dialect: str) -> list[str]:
    """The trigger names ``kernel.db.append_only_ddl`` gives ``table``."""
    if dialect == "postgresql":
        return [f"{table}_no_update_delete", f"{table}_no_truncate"]
    return [f"{table}_no_update", f"{table}_no_delete"]


def _dry_run_jobs() -> None:
    op.create_table(
        "dry_run_jobs",
        sa.Column("job_id", sa.String(36), nullable=False),
        sa.Column("contract_name", sa.String(100), nullable=False),
        sa.Column("contract_version", sa.Integer, nullable=False),
        sa.Column("baseline_version", sa.Integer),
        sa.Column("selection", sa.JSON, nullable=False),
        sa.Column("top", sa.Integer, nullable=False),
        sa.Column("max_error_rate", sa.Float),
        sa.Column("tenant", sa.String(200)),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("done", sa.Integer, nullable=False),
        sa.Column("total", sa.Integer, nullable=False),
        sa.Column("result", sa.JSON),
        sa.Column("error", sa.Text),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("job_id", name="pk_dry_run_jobs"),
    )


def downgrade() -> None:
    op.drop_table("dry_run_jobs")
    op.drop_index("ix_reward_records_tenant", "reward_records")
    op.drop_index("ix_events_tenant_position", "events")
    # DROP COLUMN touches no row, so the append-only triggers do not fire (SQLite >= 3.35).
    for table, column in (("reward_records", "tenant"), ("events", "claimed_actor"),
                          *(("api_keys", c) for c in ("tenant", "expires_at", "last_used_at",
                                                       "revoked_at", "revoked_by", "revoked_reason"))):
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
