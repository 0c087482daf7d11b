"""Serving contract versions; re-evaluation error counts; gate outcomes on runs; forced
re-runs in the firing key; rollbacks and protected aliases.

Revision ID: 0008
Revises: 0007

No data is written into the log here (a migration cannot take the log's lock): a
contract published before this revision serves nothing until someone runs
``hcp contract serve NAME VERSION`` once, which records who chose it.
"""

import sqlalchemy as sa
from alembic import op

from kernel.db import append_only_ddl

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

NEW_APPEND_ONLY = ("contract_serving_moves", "alias_protections", "alias_move_requests",
                   "alias_move_decisions")


def _ts(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "contract_serving_moves",
        sa.Column("position", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("specialist", sa.String(100), nullable=False),
        sa.Column("version", sa.Integer),
        sa.Column("previous_version", sa.Integer),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        _ts("moved_at"),
        sa.PrimaryKeyConstraint("position", name="pk_contract_serving_moves"),
        sa.ForeignKeyConstraint(["name", "version"],
                                ["contract_versions.name", "contract_versions.version"],
                                name="fk_contract_serving_moves_version"),
    )
    op.create_index("ix_contract_serving_moves_lookup", "contract_serving_moves",
                    ["name", "specialist", "position"])
    # Re-evaluation jobs count errored and skipped subjects apart from scored ones.
    for column in ("subjects_errored", "subjects_skipped"):
        op.add_column("reevaluations", sa.Column(column, sa.Integer, nullable=False,
                                                 server_default="0"))
    _gate_outcomes()
    _protected_aliases()
    dialect = op.get_bind().dialect.name
    _forced_reruns(dialect)
    for table in NEW_APPEND_ONLY:
        for statement in append_only_ddl(table, dialect):
            op.execute(statement)


def _protected_aliases() -> None:
    # Existing moves were all plain moves (a rollback was not told apart before).
    op.add_column("alias_moves", sa.Column("kind", sa.String(20), nullable=False,
                                           server_default="move"))
    op.create_table(
        "alias_protections",
        sa.Column("position", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("specialist", sa.String(100), nullable=False),
        sa.Column("alias", sa.String(100), nullable=False),
        sa.Column("protected", sa.Boolean, nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        _ts("changed_at"),
        sa.PrimaryKeyConstraint("position", name="pk_alias_protections"),
        sa.ForeignKeyConstraint(["specialist"], ["specialists.name"],
                                name="fk_alias_protections_specialist_specialists"),
    )
    op.create_index("ix_alias_protections_lookup", "alias_protections",
                    ["specialist", "alias", "position"])
    op.create_table(
        "alias_move_requests",
        sa.Column("request_id", sa.String(36), nullable=False),
        sa.Column("position", sa.BigInteger, nullable=False),
        sa.Column("specialist", sa.String(100), nullable=False),
        sa.Column("alias", sa.String(100), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("adapter_id", sa.String(120)),
        sa.Column("expected_current", sa.String(120)),
        sa.Column("requested_by", sa.String(200), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        _ts("requested_at"),
        sa.PrimaryKeyConstraint("request_id", name="pk_alias_move_requests"),
        sa.ForeignKeyConstraint(["specialist"], ["specialists.name"],
                                name="fk_alias_move_requests_specialist_specialists"),
    )
    op.create_table(
        "alias_move_decisions",
        sa.Column("request_id", sa.String(36), nullable=False),
        sa.Column("position", sa.BigInteger, nullable=False),
        sa.Column("decision", sa.String(20), nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        _ts("decided_at"),
        sa.PrimaryKeyConstraint("request_id", name="pk_alias_move_decisions"),
        sa.ForeignKeyConstraint(["request_id"], ["alias_move_requests.request_id"],
                                name="fk_alias_move_decisions_request_id_alias_move_requests"),
    )


def _gate_outcomes() -> None:
    # A run that succeeded may have produced a rejected adapter: keep what the gate said.
    op.add_column("training_runs", sa.Column("gate_outcome", sa.String(20)))
    # DATA MIGRATION: runs registered before this revision take their adapter's status as
    # registered (the gate's outcome; later promotions are status changes, not this).
    op.execute("UPDATE training_runs SET gate_outcome = (SELECT av.status FROM adapter_versions av "
               "WHERE av.training_run_id = training_runs.run_id) WHERE status = 'succeeded'")


def _forced_reruns(dialect: str) -> None:
    """The work key gains a re-run number: the same data may train again, deliberately.

    SQLite cannot change a constraint in place, so the table is copied (its append-only
    triggers go with the old table and are created again); PostgreSQL alters it.
    """
    with op.batch_alter_table("trigger_firings") as batch:
        batch.add_column(sa.Column("rerun", sa.Integer, nullable=False, server_default="0"))
        batch.drop_constraint("uq_trigger_firings_work", type_="unique")
        batch.create_unique_constraint("uq_trigger_firings_work",
                                       ["specialist", "parent_key", "dataset_cut", "rerun"])
    if dialect == "sqlite":
        for statement in append_only_ddl("trigger_firings", dialect):
            op.execute(statement)


def downgrade() -> None:
    # Forced re-runs share the old key with their first run: they must be gone first.
    with op.batch_alter_table("trigger_firings") as batch:
        batch.drop_constraint("uq_trigger_firings_work", type_="unique")
        batch.drop_column("rerun")
        batch.create_unique_constraint("uq_trigger_firings_work",
                                       ["specialist", "parent_key", "dataset_cut"])
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for statement in append_only_ddl("trigger_firings", dialect):
            op.execute(statement)
    for table in ("alias_move_decisions", "alias_move_requests", "alias_protections",
                  "contract_serving_moves"):
        op.drop_table(table)
    # Plain columns go with ALTER TABLE … DROP COLUMN (SQLite >= 3.35 too): a batch copy of
    # training_runs would drop a table that adapter versions and firings refer to.
    for table, column in (("training_runs", "gate_outcome"), ("alias_moves", "kind"),
                          ("reevaluations", "subjects_skipped"),
                          ("reevaluations", "subjects_errored")):
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
