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
    with op.batch_alter_table("base_models") as batch:
        batch.add_column(sa.Column("source", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("base_models") as batch:
        batch.drop_column("source")
