"""Serving contract versions; re-evaluation error counts; gate outcomes on runs; forced
re-runs in the firing key; rollbacks and protected aliases.

Revision ID: 0008
Revises: 0004

No data is written into the log here (a migration cannot take the log's lock): a
contract published before this revision serves nothing until someone runs
``hcp contract serve NAME VERSION`` once, which records who chose it.
"""

import sqlalchemy as sa
from alembic import op

from kernel.db import append_only_ddl

revision = "0008"
down_revision = "0004"
branch_labels = None
depends_on = None

NEW_APPEND_ONLY = ("contract_serving_moves",)


def _ts(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "contract_serving_moves",
        sa.Column("position", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("specialist", sa.String(100), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
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
    dialect = op.get_bind().dialect.name
    for table in NEW_APPEND_ONLY:
        for statement in append_only_ddl(table, dialect):
            op.execute(statement)


def downgrade() -> None:
    with op.batch_alter_table("reevaluations") as batch:
        batch.drop_column("subjects_skipped")
        batch.drop_column("subjects_errored")
    op.drop_table("contract_serving_moves")
