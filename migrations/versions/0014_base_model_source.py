"""Base models record where their weights came from (package, version, file sha256).

Revision ID: 0014
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("base_models", sa.Column("source", sa.JSON(), nullable=True))


def downgrade() -> None:
    # ALTER TABLE … DROP COLUMN (SQLite >= 3.35 too), not a batch copy: copying base_models
    # would drop a table adapter versions refer to, and its append-only triggers with it.
    op.drop_column("base_models", "source")
