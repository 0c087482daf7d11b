"""Lineage indexes: manifest members and contract versions, the adapter ancestry closure,
and the indexes that answer "what did this reward, session or contract version reach".

Revision ID: 0007
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

from kernel.db import append_only_ddl

revision = "0007"
down_revision = "0004"
branch_labels = None
depends_on = None

NEW_TABLES = ("manifest_members", "manifest_contract_versions", "adapter_ancestry")

# DATA MIGRATION 1: the members of every manifest frozen before this revision, read from
# its reward_ids (JSON) joined to the reward records. The same rows the freezing code
# writes for a new manifest. Reward ids are text in the JSON; reward_records.reward_id is
# a native uuid on PostgreSQL and 32 hex digits (no dashes) on SQLite.
FILL_MEMBERS = {
    "postgresql": """
        INSERT INTO manifest_members (manifest_id, reward_position, reward_id, subject_id,
                                      stream_id, split)
        SELECT m.manifest_id, r.position, r.reward_id, r.subject_id, r.stream_id, r.split
        FROM dataset_manifests m
        CROSS JOIN LATERAL json_array_elements_text(m.reward_ids) AS ids(reward_id)
        JOIN reward_records r ON r.reward_id = CAST(ids.reward_id AS uuid)
    """,
    "sqlite": """
        INSERT INTO manifest_members (manifest_id, reward_position, reward_id, subject_id,
                                      stream_id, split)
        SELECT m.manifest_id, r.position, r.reward_id, r.subject_id, r.stream_id, r.split
        FROM dataset_manifests m, json_each(m.reward_ids) AS ids
        JOIN reward_records r ON r.reward_id = replace(ids.value, '-', '')
    """,
}

# DATA MIGRATION 2: per manifest, how many of its rewards each contract version judged.
FILL_CONTRACT_VERSIONS = """
    INSERT INTO manifest_contract_versions (manifest_id, contract_name, contract_version,
                                            reward_count)
    SELECT mm.manifest_id, r.contract_name, r.contract_version, count(*)
    FROM manifest_members mm JOIN reward_records r ON r.reward_id = mm.reward_id
    GROUP BY mm.manifest_id, r.contract_name, r.contract_version
"""

# DATA MIGRATION 3: the ancestry closure of every registered version (itself at depth 0,
# its parent at 1, … its root), by a recursive walk up parent_adapter_id.
FILL_ANCESTRY = """
    INSERT INTO adapter_ancestry (descendant_id, depth, ancestor_id)
    WITH RECURSIVE up(descendant_id, depth, ancestor_id) AS (
        SELECT adapter_id, 0, adapter_id FROM adapter_versions
        UNION ALL
        SELECT up.descendant_id, up.depth + 1, a.parent_adapter_id
        FROM up JOIN adapter_versions a ON a.adapter_id = up.ancestor_id
        WHERE a.parent_adapter_id IS NOT NULL
    )
    SELECT descendant_id, depth, ancestor_id FROM up
"""


def upgrade() -> None:
    op.create_table(
        "manifest_members",
        sa.Column("manifest_id", sa.String(36), nullable=False),
        sa.Column("reward_position", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("reward_id", sa.Uuid, nullable=False),
        sa.Column("subject_id", sa.String(300), nullable=False),
        sa.Column("stream_id", sa.String(200), nullable=False),
        sa.Column("split", sa.String(10), nullable=False),
        sa.PrimaryKeyConstraint("manifest_id", "reward_position", name="pk_manifest_members"),
        sa.ForeignKeyConstraint(["manifest_id"], ["dataset_manifests.manifest_id"],
                                name="fk_manifest_members_manifest_id_dataset_manifests"),
    )
    op.create_index("ix_manifest_members_reward", "manifest_members", ["reward_id"])
    op.create_index("ix_manifest_members_stream", "manifest_members", ["stream_id"])
    op.create_table(
        "manifest_contract_versions",
        sa.Column("manifest_id", sa.String(36), nullable=False),
        sa.Column("contract_name", sa.String(100), nullable=False),
        sa.Column("contract_version", sa.Integer, nullable=False),
        sa.Column("reward_count", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("manifest_id", "contract_name", "contract_version",
                                name="pk_manifest_contract_versions"),
        sa.ForeignKeyConstraint(["manifest_id"], ["dataset_manifests.manifest_id"],
                                name="fk_manifest_contract_versions_manifest_id_dataset_manifests"),
    )
    op.create_index("ix_manifest_contract_versions_version", "manifest_contract_versions",
                    ["contract_name", "contract_version"])
    op.create_table(
        "adapter_ancestry",
        sa.Column("descendant_id", sa.String(120), nullable=False),
        sa.Column("depth", sa.Integer, nullable=False, autoincrement=False),
        sa.Column("ancestor_id", sa.String(120), nullable=False),
        sa.PrimaryKeyConstraint("descendant_id", "depth", name="pk_adapter_ancestry"),
        sa.ForeignKeyConstraint(["descendant_id"], ["adapter_versions.adapter_id"],
                                name="fk_adapter_ancestry_descendant_id_adapter_versions"),
        sa.ForeignKeyConstraint(["ancestor_id"], ["adapter_versions.adapter_id"],
                                name="fk_adapter_ancestry_ancestor_id_adapter_versions"),
    )
    op.create_index("ix_adapter_ancestry_ancestor", "adapter_ancestry",
                    ["ancestor_id", "descendant_id"])
    op.create_index("ix_adapter_versions_manifest", "adapter_versions", ["manifest_id"])
    op.create_index("ix_adapter_contract_versions_version", "adapter_contract_versions",
                    ["contract_name", "contract_version"])
    op.create_index("ix_alias_moves_adapter", "alias_moves", ["adapter_id"])
    dialect = op.get_bind().dialect.name
    op.execute(FILL_MEMBERS["postgresql" if dialect == "postgresql" else "sqlite"])
    op.execute(FILL_CONTRACT_VERSIONS)
    op.execute(FILL_ANCESTRY)
    for table in NEW_TABLES:
        for statement in append_only_ddl(table, dialect):
            op.execute(statement)


def downgrade() -> None:
    op.drop_index("ix_alias_moves_adapter", "alias_moves")
    op.drop_index("ix_adapter_contract_versions_version", "adapter_contract_versions")
    op.drop_index("ix_adapter_versions_manifest", "adapter_versions")
    for table in reversed(NEW_TABLES):
        op.drop_table(table)
