"""A key's console sessions end at sign-out: the position of its latest
``api_key.console_signed_out`` event, projected onto the key's row.

A console cookie carries the value this column had when it was issued, and is refused
once the column has moved past it (access/keys.py). NULL: never signed out.

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("api_keys", sa.Column("console_signed_out_position", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    # DROP COLUMN (SQLite >= 3.35 too), not a batch copy of the table.
    op.drop_column("api_keys", "console_signed_out_position")
