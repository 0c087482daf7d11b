"""Adapter registry and training: base models, specialists, dataset manifests, training
runs, adapter versions with lineage, status changes, alias moves, trigger firings.

Revision ID: 0003
Revises: 0002
"""

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

from kernel.db import append_only_ddl

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

APPEND_ONLY = ("base_models", "specialists", "dataset_manifests", "adapter_versions",
               "adapter_status_changes", "adapter_contract_versions", "alias_moves",
               "trigger_firings", "trigger_policies")

# DATA MIGRATION. The default Mixture-of-LoRA slots. More can be added at any time
# (POST /v1/specialists, which also writes a specialist.created event); these four are
# seeded here, without events, because a migration must not write into the hash chain
# (it cannot take the log lock the store takes, and an empty log is a valid start).
DEFAULT_SPECIALISTS = (
    ("chat", "Open conversation"),
    ("agent", "Multi-step tool use"),
    ("coding", "Writing and explaining code"),
    ("genui", "Generating user-interface descriptions"),
)


def _ts(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "base_models",
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("weights_sha256", sa.String(64), nullable=False),
        sa.Column("config", sa.JSON, nullable=False),
        sa.Column("registered_by", sa.String(200), nullable=False),
        _ts("registered_at"),
        sa.Column("event_position", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_base_models"),
    )
    specialists = op.create_table(
        "specialists",
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        _ts("created_at"),
        sa.PrimaryKeyConstraint("name", name="pk_specialists"),
    )
    op.create_table(
        "dataset_manifests",
        sa.Column("manifest_id", sa.String(36), nullable=False),
        sa.Column("specialist", sa.String(100), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("reward_ids", sa.JSON, nullable=False),
        sa.Column("subject_event_ids", sa.JSON, nullable=False),
        sa.Column("contract_versions", sa.JSON, nullable=False),
        sa.Column("split", sa.JSON, nullable=False),
        sa.Column("cut_from", sa.BigInteger, nullable=False),
        sa.Column("cut_to", sa.BigInteger, nullable=False),
        sa.Column("example_count", sa.Integer, nullable=False),
        sa.Column("examples_sha256", sa.String(64), nullable=False),
        _ts("created_at"),
        sa.PrimaryKeyConstraint("manifest_id", name="pk_dataset_manifests"),
        sa.UniqueConstraint("content_hash", name="uq_dataset_manifests_content_hash"),
        sa.ForeignKeyConstraint(["specialist"], ["specialists.name"],
                                name="fk_dataset_manifests_specialist_specialists"),
    )
    op.create_table(
        "training_runs",
        sa.Column("run_id", sa.String(36), nullable=False),
        sa.Column("specialist", sa.String(100), nullable=False),
        sa.Column("parent_adapter_id", sa.String(120)),
        sa.Column("base_model", sa.String(100), nullable=False),
        sa.Column("manifest_id", sa.String(36), nullable=False),
        sa.Column("firing_id", sa.String(36), nullable=False),
        sa.Column("hyper", sa.JSON, nullable=False),
        sa.Column("gate", sa.JSON, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("step", sa.Integer, nullable=False),
        sa.Column("total_steps", sa.Integer, nullable=False),
        sa.Column("last_loss", sa.Float),
        sa.Column("error", sa.Text),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("lease_owner", sa.String(200)),
        _ts("lease_until", nullable=True),
        sa.Column("adapter_id", sa.String(120)),
        sa.Column("created_by", sa.String(200), nullable=False),
        _ts("created_at"),
        _ts("updated_at"),
        _ts("started_at", nullable=True),
        _ts("finished_at", nullable=True),
        sa.PrimaryKeyConstraint("run_id", name="pk_training_runs"),
        sa.ForeignKeyConstraint(["specialist"], ["specialists.name"],
                                name="fk_training_runs_specialist_specialists"),
        sa.ForeignKeyConstraint(["base_model"], ["base_models.name"],
                                name="fk_training_runs_base_model_base_models"),
        sa.ForeignKeyConstraint(["manifest_id"], ["dataset_manifests.manifest_id"],
                                name="fk_training_runs_manifest_id_dataset_manifests"),
    )
    op.create_index("ix_training_runs_specialist_status", "training_runs", ["specialist", "status"])
    op.create_table(
        "adapter_versions",
        sa.Column("adapter_id", sa.String(120), nullable=False),
        sa.Column("specialist", sa.String(100), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("parent_adapter_id", sa.String(120)),
        sa.Column("base_model", sa.String(100), nullable=False),
        sa.Column("training_run_id", sa.String(36), nullable=False),
        sa.Column("manifest_id", sa.String(36), nullable=False),
        sa.Column("hyper", sa.JSON, nullable=False),
        sa.Column("metrics", sa.JSON, nullable=False),
        sa.Column("artifact_sha256", sa.String(64), nullable=False),
        sa.Column("artifact_uri", sa.Text, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("registered_by", sa.String(200), nullable=False),
        _ts("registered_at"),
        sa.Column("event_position", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("adapter_id", name="pk_adapter_versions"),
        sa.UniqueConstraint("specialist", "version", name="uq_adapter_versions_specialist_version"),
        # A run registers at most one version, however often its task is delivered.
        sa.UniqueConstraint("training_run_id", name="uq_adapter_versions_training_run_id"),
        sa.ForeignKeyConstraint(["specialist"], ["specialists.name"],
                                name="fk_adapter_versions_specialist_specialists"),
        sa.ForeignKeyConstraint(["parent_adapter_id"], ["adapter_versions.adapter_id"],
                                name="fk_adapter_versions_parent_adapter_id_adapter_versions"),
        sa.ForeignKeyConstraint(["base_model"], ["base_models.name"],
                                name="fk_adapter_versions_base_model_base_models"),
        sa.ForeignKeyConstraint(["training_run_id"], ["training_runs.run_id"],
                                name="fk_adapter_versions_training_run_id_training_runs"),
        sa.ForeignKeyConstraint(["manifest_id"], ["dataset_manifests.manifest_id"],
                                name="fk_adapter_versions_manifest_id_dataset_manifests"),
    )
    op.create_table(
        "adapter_status_changes",
        sa.Column("position", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("adapter_id", sa.String(120), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        _ts("changed_at"),
        sa.PrimaryKeyConstraint("position", name="pk_adapter_status_changes"),
        sa.ForeignKeyConstraint(["adapter_id"], ["adapter_versions.adapter_id"],
                                name="fk_adapter_status_changes_adapter_id_adapter_versions"),
    )
    op.create_index("ix_adapter_status_changes_adapter_id", "adapter_status_changes", ["adapter_id"])
    op.create_table(
        "adapter_contract_versions",
        sa.Column("adapter_id", sa.String(120), nullable=False),
        sa.Column("contract_name", sa.String(100), nullable=False),
        sa.Column("contract_version", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("adapter_id", "contract_name", "contract_version",
                                name="pk_adapter_contract_versions"),
        sa.ForeignKeyConstraint(["adapter_id"], ["adapter_versions.adapter_id"],
                                name="fk_adapter_contract_versions_adapter_id_adapter_versions"),
        sa.ForeignKeyConstraint(["contract_name", "contract_version"],
                                ["contract_versions.name", "contract_versions.version"],
                                name="fk_adapter_contract_versions_contract_versions"),
    )
    op.create_table(
        "alias_moves",
        sa.Column("position", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("specialist", sa.String(100), nullable=False),
        sa.Column("alias", sa.String(100), nullable=False),
        sa.Column("adapter_id", sa.String(120)),
        sa.Column("previous_adapter_id", sa.String(120)),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        _ts("moved_at"),
        sa.PrimaryKeyConstraint("position", name="pk_alias_moves"),
        sa.ForeignKeyConstraint(["specialist"], ["specialists.name"],
                                name="fk_alias_moves_specialist_specialists"),
        sa.ForeignKeyConstraint(["adapter_id"], ["adapter_versions.adapter_id"],
                                name="fk_alias_moves_adapter_id_adapter_versions"),
    )
    op.create_index("ix_alias_moves_lookup", "alias_moves", ["specialist", "alias", "position"])
    op.create_table(
        "trigger_firings",
        sa.Column("firing_id", sa.String(36), nullable=False),
        sa.Column("specialist", sa.String(100), nullable=False),
        sa.Column("parent_key", sa.String(120), nullable=False),
        sa.Column("dataset_cut", sa.BigInteger, nullable=False),
        sa.Column("policy", sa.String(40), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("run_id", sa.String(36), nullable=False),
        sa.Column("fired_by", sa.String(200), nullable=False),
        _ts("fired_at"),
        sa.Column("event_position", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("firing_id", name="pk_trigger_firings"),
        # THE exactly-once key: one run per (specialist, parent, dataset cut).
        sa.UniqueConstraint("specialist", "parent_key", "dataset_cut",
                            name="uq_trigger_firings_work"),
        sa.ForeignKeyConstraint(["specialist"], ["specialists.name"],
                                name="fk_trigger_firings_specialist_specialists"),
        sa.ForeignKeyConstraint(["run_id"], ["training_runs.run_id"],
                                name="fk_trigger_firings_run_id_training_runs"),
    )
    op.create_table(
        "trigger_policies",
        sa.Column("position", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("specialist", sa.String(100), nullable=False),
        sa.Column("config", sa.JSON, nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        _ts("configured_at"),
        sa.PrimaryKeyConstraint("position", name="pk_trigger_policies"),
        sa.ForeignKeyConstraint(["specialist"], ["specialists.name"],
                                name="fk_trigger_policies_specialist_specialists"),
    )
    now = datetime.now(UTC)
    op.bulk_insert(specialists, [
        {"name": name, "description": text, "created_by": "migration:0003", "created_at": now}
        for name, text in DEFAULT_SPECIALISTS
    ])
    dialect = op.get_bind().dialect.name
    for table in APPEND_ONLY:
        for statement in append_only_ddl(table, dialect):
            op.execute(statement)


def downgrade() -> None:
    for table in ("trigger_policies", "trigger_firings", "alias_moves", "adapter_contract_versions",
                  "adapter_status_changes", "adapter_versions", "training_runs",
                  "dataset_manifests", "specialists", "base_models"):
        op.drop_table(table)
