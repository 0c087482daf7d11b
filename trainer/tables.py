"""SQL tables of the adapter registry and training (SQLAlchemy Core, on the shared metadata).

Every table but ``training_runs`` is append-only (database triggers refuse UPDATE and
DELETE): a promotion, a rejection or an alias move is a new row, written in the same
transaction as the event that records it in the log. ``training_runs`` is the one
mutable projection (queued -> running -> succeeded | failed, with step and loss), and
each of its status changes is also a ``training.*`` event.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    DateTime,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from hcp.db import metadata

ADAPTER_ID = 120  # "<specialist>@<version>"

base_models = Table(
    "base_models",
    metadata,
    Column("name", String(100), primary_key=True),
    Column("path", Text, nullable=False),
    Column("weights_sha256", String(64), nullable=False),
    Column("config", JSON, nullable=False),
    Column("registered_by", String(200), nullable=False),
    Column("registered_at", DateTime(timezone=True), nullable=False),
    Column("event_position", BigInteger, nullable=False),
)

specialists = Table(
    "specialists",
    metadata,
    Column("name", String(100), primary_key=True),
    Column("description", Text, nullable=False),
    Column("created_by", String(200), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

dataset_manifests = Table(
    "dataset_manifests",
    metadata,
    Column("manifest_id", String(36), primary_key=True),
    Column("specialist", String(100), ForeignKey("specialists.name"), nullable=False),
    Column("content_hash", String(64), nullable=False, unique=True),
    Column("reward_ids", JSON, nullable=False),  # in reward position order
    Column("subject_event_ids", JSON, nullable=False),  # subject_id -> event ids
    Column("contract_versions", JSON, nullable=False),  # [{name, version, hash}]
    Column("split", JSON, nullable=False),  # {"train": n, "held_out": m}
    Column("cut_from", BigInteger, nullable=False),  # reward positions (cut_from, cut_to]
    Column("cut_to", BigInteger, nullable=False),
    Column("example_count", Integer, nullable=False),
    Column("examples_sha256", String(64), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

training_runs = Table(
    "training_runs",
    metadata,
    Column("run_id", String(36), primary_key=True),
    Column("specialist", String(100), ForeignKey("specialists.name"), nullable=False),
    # No foreign key here: adapter_versions references training_runs, and the lineage FK
    # that matters is adapter_versions.parent_adapter_id.
    Column("parent_adapter_id", String(ADAPTER_ID)),
    Column("base_model", String(100), ForeignKey("base_models.name"), nullable=False),
    Column("manifest_id", String(36), ForeignKey("dataset_manifests.manifest_id"), nullable=False),
    Column("firing_id", String(36), nullable=False),
    Column("hyper", JSON, nullable=False),
    Column("gate", JSON, nullable=False),  # margin, tolerance, auto_promote
    Column("status", String(20), nullable=False),  # queued | running | succeeded | failed
    Column("step", Integer, nullable=False),
    Column("total_steps", Integer, nullable=False),
    Column("last_loss", Float),
    Column("error", Text),
    Column("attempts", Integer, nullable=False),
    Column("lease_owner", String(200)),  # the worker running it, while lease_until is ahead
    Column("lease_until", DateTime(timezone=True)),
    Column("adapter_id", String(ADAPTER_ID)),
    Column("created_by", String(200), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Column("started_at", DateTime(timezone=True)),
    Column("finished_at", DateTime(timezone=True)),
    Index("ix_training_runs_specialist_status", "specialist", "status"),
)

adapter_versions = Table(
    "adapter_versions",
    metadata,
    Column("adapter_id", String(ADAPTER_ID), primary_key=True),
    Column("specialist", String(100), ForeignKey("specialists.name"), nullable=False),
    Column("version", Integer, nullable=False),
    Column("parent_adapter_id", String(ADAPTER_ID), ForeignKey("adapter_versions.adapter_id")),
    Column("base_model", String(100), ForeignKey("base_models.name"), nullable=False),
    # UNIQUE: a run registers at most one version, however often its task is delivered.
    Column("training_run_id", String(36), ForeignKey("training_runs.run_id"), nullable=False,
           unique=True),
    Column("manifest_id", String(36), ForeignKey("dataset_manifests.manifest_id"), nullable=False),
    Column("hyper", JSON, nullable=False),
    Column("metrics", JSON, nullable=False),
    Column("artifact_sha256", String(64), nullable=False),
    Column("artifact_uri", Text, nullable=False),
    Column("status", String(20), nullable=False),  # as registered: candidate|promoted|rejected
    Column("registered_by", String(200), nullable=False),
    Column("registered_at", DateTime(timezone=True), nullable=False),
    Column("event_position", BigInteger, nullable=False),
    UniqueConstraint("specialist", "version", name="uq_adapter_versions_specialist_version"),
)

# Status after registration: the latest row wins (position = its event's position).
adapter_status_changes = Table(
    "adapter_status_changes",
    metadata,
    Column("position", BigInteger, primary_key=True, autoincrement=False),
    Column("adapter_id", String(ADAPTER_ID), ForeignKey("adapter_versions.adapter_id"),
           nullable=False, index=True),
    Column("status", String(20), nullable=False),
    Column("actor", String(200), nullable=False),
    Column("reason", Text, nullable=False),
    Column("changed_at", DateTime(timezone=True), nullable=False),
)

adapter_contract_versions = Table(
    "adapter_contract_versions",
    metadata,
    Column("adapter_id", String(ADAPTER_ID), ForeignKey("adapter_versions.adapter_id"),
           primary_key=True),
    Column("contract_name", String(100), primary_key=True),
    Column("contract_version", Integer, primary_key=True),
    ForeignKeyConstraint(["contract_name", "contract_version"],
                         ["contract_versions.name", "contract_versions.version"]),
)

# position = the global position of the alias.moved event: commit order, so "latest move
# at or before T" is well defined even for two moves in the same microsecond.
alias_moves = Table(
    "alias_moves",
    metadata,
    Column("position", BigInteger, primary_key=True, autoincrement=False),
    Column("specialist", String(100), ForeignKey("specialists.name"), nullable=False),
    Column("alias", String(100), nullable=False),
    Column("adapter_id", String(ADAPTER_ID), ForeignKey("adapter_versions.adapter_id")),
    Column("previous_adapter_id", String(ADAPTER_ID)),
    Column("actor", String(200), nullable=False),
    Column("reason", Text, nullable=False),
    Column("moved_at", DateTime(timezone=True), nullable=False),
    Index("ix_alias_moves_lookup", "specialist", "alias", "position"),
)

trigger_firings = Table(
    "trigger_firings",
    metadata,
    Column("firing_id", String(36), primary_key=True),
    Column("specialist", String(100), ForeignKey("specialists.name"), nullable=False),
    # The parent's adapter id, or 'root': NULLs never collide in a UNIQUE constraint.
    Column("parent_key", String(ADAPTER_ID), nullable=False),
    Column("dataset_cut", BigInteger, nullable=False),  # last reward position included
    Column("policy", String(40), nullable=False),  # count | drift | schedule | manual
    Column("reason", Text, nullable=False),
    Column("run_id", String(36), ForeignKey("training_runs.run_id"), nullable=False),
    Column("fired_by", String(200), nullable=False),
    Column("fired_at", DateTime(timezone=True), nullable=False),
    Column("event_position", BigInteger, nullable=False),
    # THE exactly-once key: one run per (specialist, parent, dataset cut), whoever fires.
    UniqueConstraint("specialist", "parent_key", "dataset_cut", name="uq_trigger_firings_work"),
)

# Trigger configurations set through the API; the latest per specialist wins.
trigger_policies = Table(
    "trigger_policies",
    metadata,
    Column("position", BigInteger, primary_key=True, autoincrement=False),
    Column("specialist", String(100), ForeignKey("specialists.name"), nullable=False),
    Column("config", JSON, nullable=False),
    Column("actor", String(200), nullable=False),
    Column("configured_at", DateTime(timezone=True), nullable=False),
)

APPEND_ONLY = ("base_models", "specialists", "dataset_manifests", "adapter_versions",
               "adapter_status_changes", "adapter_contract_versions", "alias_moves",
               "trigger_firings", "trigger_policies")
