"""Judge criteria: the judges' verdicts on each reward (``reward_records.judgements``) and
the subjects waiting for a judge (``judge_backlog``, working state).

Rows written before keep ``judgements`` NULL: they had no judge, and their chain hashes
leave the field out when it is empty (evaluators/model.py).

Revision ID: 0018
Revises: 0017
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("reward_records", sa.Column("judgements", sa.JSON()))
    op.create_table(
        "judge_backlog",
        sa.Column("subject_id", sa.String(300), primary_key=True),
        sa.Column("contract_name", sa.String(100), primary_key=True),
        sa.Column("contract_version", sa.Integer(), primary_key=True),
        sa.Column("subject_kind", sa.String(20), nullable=False),
        sa.Column("stream_id", sa.String(200), nullable=False),
        sa.Column("closer_seq", sa.BigInteger(), nullable=False),
        sa.Column("tenant", sa.String(200)),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text()),
        sa.Column("next_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_judge_backlog_due", "judge_backlog", ["status", "next_at"])


def downgrade() -> None:
    op.drop_index("ix_judge_backlog_due", "judge_backlog")
    op.drop_table("judge_backlog")
    # Not a batch (SQLite would copy the table and lose its append-only triggers): SQLite
    # 3.35+ drops a column in place.
    op.drop_column("reward_records", "judgements")
