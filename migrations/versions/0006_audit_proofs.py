"""The auditor's proofs: the Merkle tree's nodes, signed checkpoints, the reward chain.

``merkle_nodes`` and ``audit_checkpoints`` are new and append-only. ``reward_records``
gains ``prev_hash`` and ``hash`` (evaluators/chain.py); rows already stored are chained
here, in position order, with the same function the reward store uses from now on. That
is an UPDATE of an append-only table, so its triggers are lifted for the backfill only
(inside this migration's transaction) and put back before it commits.

Revision ID: 0006
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

from evaluators.chain import GENESIS_HASH, reward_hash
from evaluators.rewards import from_row
from evaluators.tables import reward_records
from kernel.db import append_only_ddl

revision = "0006"
down_revision = "0005"  # the chain: 0004, 0007, 0008, 0005, 0006
branch_labels = None
depends_on = None

PAGE = 2000


def upgrade() -> None:
    op.create_table(
        "merkle_nodes",
        sa.Column("level", sa.SmallInteger, nullable=False, autoincrement=False),
        sa.Column("idx", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("hash", sa.LargeBinary(32), nullable=False),
        sa.PrimaryKeyConstraint("level", "idx", name="pk_merkle_nodes"),
        sa.CheckConstraint("level >= 0 AND level < 64", name="ck_merkle_nodes_level"),
        sa.CheckConstraint("idx >= 0", name="ck_merkle_nodes_idx"),
    )
    op.create_table(
        "audit_checkpoints",
        sa.Column("position", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("origin", sa.String(200), nullable=False),
        sa.Column("tree_size", sa.BigInteger, nullable=False),
        sa.Column("root", sa.LargeBinary(32), nullable=False),
        sa.Column("chain_head", sa.String(64), nullable=False),
        sa.Column("signed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("key_id", sa.String(8), nullable=False),
        sa.Column("note", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("position", name="pk_audit_checkpoints"),
    )
    op.create_index("ix_audit_checkpoints_tree_size", "audit_checkpoints", ["tree_size"])
    dialect = op.get_bind().dialect.name
    for table in ("merkle_nodes", "audit_checkpoints"):
        for statement in append_only_ddl(table, dialect):
            op.execute(statement)
    # NOT NULL needs a default to be added to a table with rows (SQLite); PostgreSQL
    # drops it again below, SQLite keeps '' (which no stored row has after the backfill).
    for column in ("prev_hash", "hash"):
        op.add_column("reward_records", sa.Column(column, sa.String(64), nullable=False,
                                                  server_default=""))
    _chain_stored_rewards(dialect)
    if dialect == "postgresql":
        for column in ("prev_hash", "hash"):
            op.alter_column("reward_records", column, server_default=None)


LATER_COLUMNS = frozenset({"judgements"})


def _chain_stored_rewards(dialect: str) -> None:
    bind = op.get_bind()
    _lift_append_only(dialect)
    prev_hash, after = GENESIS_HASH, 0
    while True:
        # The columns the table had then (later revisions add more, e.g. 0018's judgements).
        columns = [c for c in reward_records.c if c.name not in LATER_COLUMNS]
        rows = bind.execute(sa.select(*columns).where(reward_records.c.position > after)
                            .order_by(reward_records.c.position).limit(PAGE)).all()
        if not rows:
            break
        updates = []
        for row in rows:
            record = from_row({**row._mapping, "prev_hash": prev_hash, "hash": None})
            digest = reward_hash(prev_hash, record)
            updates.append({"p": row.position, "prev": prev_hash, "h": digest})
            prev_hash = digest
        bind.execute(sa.text("UPDATE reward_records SET prev_hash = :prev, hash = :h "
                             "WHERE position = :p"), updates)
        after = rows[-1].position
    _restore_append_only(dialect)


def _lift_append_only(dialect: str) -> None:
    if dialect == "postgresql":
        op.execute("ALTER TABLE reward_records DISABLE TRIGGER reward_records_no_update_delete")
    else:
        op.execute("DROP TRIGGER reward_records_no_update")
        op.execute("DROP TRIGGER reward_records_no_delete")


def _restore_append_only(dialect: str) -> None:
    if dialect == "postgresql":
        op.execute("ALTER TABLE reward_records ENABLE TRIGGER reward_records_no_update_delete")
    else:
        for statement in append_only_ddl("reward_records", dialect):
            op.execute(statement)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.drop_column("reward_records", "hash")
        op.drop_column("reward_records", "prev_hash")
    else:
        # SQLite drops a column by copying the table, which the append-only triggers refuse
        # and which drops them: lift, copy, put back.
        _lift_append_only(dialect)
        with op.batch_alter_table("reward_records") as batch:
            batch.drop_column("hash")
            batch.drop_column("prev_hash")
        _restore_append_only(dialect)
    op.drop_table("audit_checkpoints")
    op.drop_table("merkle_nodes")
