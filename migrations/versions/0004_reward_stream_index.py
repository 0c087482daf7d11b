"""Index reward records by stream: `GET /v1/rewards?stream_id=` no longer scans the table.

Revision ID: 0004
Revises: 0003
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_reward_records_stream", "reward_records", ["stream_id", "position"])


def downgrade() -> None:
    op.drop_index("ix_reward_records_stream", "reward_records")
