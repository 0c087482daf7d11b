"""Contract versions, re-evaluation jobs and append-only reward records.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

from kernel.db import append_only_ddl

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# A published version is immutable: its document and hash can never change again.
PG_FREEZE = """
CREATE OR REPLACE FUNCTION hcp_freeze_published_contract() RETURNS trigger AS $$
BEGIN
    IF OLD.status <> 'draft' AND (NEW.document IS DISTINCT FROM OLD.document
                                  OR NEW.content_hash IS DISTINCT FROM OLD.content_hash) THEN
        RAISE EXCEPTION 'contract %@% is published: its document is immutable', OLD.name, OLD.version
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
"""
PG_FREEZE_TRIGGER = (
    "CREATE TRIGGER contract_versions_frozen BEFORE UPDATE ON contract_versions "
    "FOR EACH ROW EXECUTE FUNCTION hcp_freeze_published_contract()"
)
SQLITE_FREEZE_TRIGGER = """
CREATE TRIGGER contract_versions_frozen BEFORE UPDATE OF document, content_hash ON contract_versions
WHEN OLD.status <> 'draft'
BEGIN SELECT RAISE(ABORT, 'contract version is published: its document is immutable'); END
"""
NO_DELETE_SQLITE = """
CREATE TRIGGER contract_versions_no_delete BEFORE DELETE ON contract_versions
BEGIN SELECT RAISE(ABORT, 'table contract_versions keeps every version: DELETE is not allowed'); END
"""


def upgrade() -> None:
    op.create_table(
        "contract_versions",
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("parent_version", sa.Integer),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("document", sa.Text, nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("published_at", sa.DateTime(timezone=True)),
        sa.Column("published_by", sa.String(200)),
        sa.Column("retired_at", sa.DateTime(timezone=True)),
        sa.Column("last_event_position", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("name", "version", name="pk_contract_versions"),
        sa.ForeignKeyConstraint(["name", "parent_version"],
                                ["contract_versions.name", "contract_versions.version"],
                                name="fk_contract_versions_parent"),
    )
    op.create_table(
        "reevaluations",
        sa.Column("job_id", sa.String(36), nullable=False),
        sa.Column("contract_name", sa.String(100), nullable=False),
        sa.Column("contract_version", sa.Integer, nullable=False),
        sa.Column("from_position", sa.BigInteger, nullable=False),
        sa.Column("to_position", sa.BigInteger, nullable=False),
        sa.Column("done_position", sa.BigInteger, nullable=False),
        sa.Column("subjects_scored", sa.Integer, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("error", sa.Text),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("job_id", name="pk_reevaluations"),
        sa.UniqueConstraint("contract_name", "contract_version", "from_position",
                            name="uq_reevaluations_version_from"),
    )
    op.create_table(
        "reward_records",
        sa.Column("position", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("reward_id", sa.Uuid, nullable=False),
        sa.Column("subject_id", sa.String(300), nullable=False),
        sa.Column("subject_kind", sa.String(20), nullable=False),
        sa.Column("stream_id", sa.String(200), nullable=False),
        sa.Column("first_position", sa.BigInteger, nullable=False),
        sa.Column("last_position", sa.BigInteger, nullable=False),
        sa.Column("event_ids", sa.JSON, nullable=False),
        sa.Column("contract_name", sa.String(100), nullable=False),
        sa.Column("contract_version", sa.Integer, nullable=False),
        sa.Column("contract_hash", sa.String(64), nullable=False),
        sa.Column("evaluator_version", sa.String(50), nullable=False),
        sa.Column("score", sa.Float),
        sa.Column("components", sa.JSON, nullable=False),
        sa.Column("gates", sa.JSON, nullable=False),
        sa.Column("split", sa.String(10), nullable=False),
        sa.Column("specialist", sa.String(100)),
        sa.Column("adapter_version", sa.String(200)),
        sa.Column("eligible", sa.Boolean, nullable=False),
        sa.Column("error", sa.Text),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("position", name="pk_reward_records"),
        sa.UniqueConstraint("reward_id", name="uq_reward_records_reward_id"),
        sa.UniqueConstraint("subject_id", "contract_name", "contract_version",
                            name="uq_reward_records_subject_version"),
        sa.ForeignKeyConstraint(["contract_name", "contract_version"],
                                ["contract_versions.name", "contract_versions.version"],
                                name="fk_reward_records_contract"),
    )
    op.create_index("ix_reward_records_contract", "reward_records",
                    ["contract_name", "contract_version", "position"])
    op.create_index("ix_reward_records_specialist", "reward_records", ["specialist", "position"])
    dialect = op.get_bind().dialect.name
    for statement in append_only_ddl("reward_records", dialect):
        op.execute(statement)
    if dialect == "postgresql":
        op.execute(PG_FREEZE)
        op.execute(PG_FREEZE_TRIGGER)
        op.execute("CREATE TRIGGER contract_versions_no_delete BEFORE DELETE ON contract_versions "
                   "FOR EACH ROW EXECUTE FUNCTION hcp_refuse_change()")
    else:
        op.execute(SQLITE_FREEZE_TRIGGER)
        op.execute(NO_DELETE_SQLITE)


def downgrade() -> None:
    op.drop_table("reward_records")
    op.drop_table("reevaluations")
    op.drop_table("contract_versions")
