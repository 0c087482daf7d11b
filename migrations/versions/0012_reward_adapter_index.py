"""Index reward records by adapter version: the console's reward distributions of one
adapter (and two side by side) walk it backwards instead of scanning every record.

Revision ID: 0012
Revises: 0008
"""

from alembic import op

revision = "0012"
down_revision = "0006"  # the chain: 0004, 0007, 0008, 0005, 0006, 0012
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_reward_records_adapter", "reward_records", ["adapter_version", "position"])


def downgrade() -> None:
    op.drop_index("ix_reward_records_adapter", "reward_records")
