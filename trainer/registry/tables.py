"""SQL tables of the adapter registry: base models, specialists, adapter versions, aliases.

All append-only (database triggers refuse UPDATE and DELETE): a promotion, a rejection or
an alias move is a new row, written in the same transaction as the event that records it.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from kernel.db import metadata
from trainer.registry.model import ADAPTER_ID_LENGTH as ADAPTER_ID

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
    # Where the weights came from (package, version, file sha256), when known: 0014
    Column("source", JSON, nullable=True),
)


specialists = Table(
    "specialists",
    metadata,
    Column("name", String(100), primary_key=True),
    Column("description", Text, nullable=False),
    Column("created_by", String(200), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
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
    Index("ix_adapter_versions_manifest", "manifest_id"),  # which versions trained on a manifest
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
    Index("ix_adapter_contract_versions_version", "contract_name", "contract_version"),
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
    # move | rollback: a rollback's previous_adapter_id is the version it rolled back from,
    # which a later rollback will not return to.
    Column("kind", String(20), nullable=False, server_default="move"),
    Index("ix_alias_moves_lookup", "specialist", "alias", "position"),
    Index("ix_alias_moves_adapter", "adapter_id"),  # when was this version a target
)


# The ancestry closure: one row per (version, ancestor at ``depth``), depth 0 the version
# itself, written at registration (a version's ancestors never change). Upstream of a
# version is one index range; downstream of a set is one join.
adapter_ancestry = Table(
    "adapter_ancestry",
    metadata,
    Column("descendant_id", String(ADAPTER_ID), ForeignKey("adapter_versions.adapter_id"),
           primary_key=True),
    Column("depth", Integer, primary_key=True, autoincrement=False),
    Column("ancestor_id", String(ADAPTER_ID), ForeignKey("adapter_versions.adapter_id"),
           nullable=False),
    Index("ix_adapter_ancestry_ancestor", "ancestor_id", "descendant_id"),
)


# Whether moving an alias needs a second key's approval; the latest row of an alias wins.
alias_protections = Table(
    "alias_protections",
    metadata,
    Column("position", BigInteger, primary_key=True, autoincrement=False),
    Column("specialist", String(100), ForeignKey("specialists.name"), nullable=False),
    Column("alias", String(100), nullable=False),
    Column("protected", Boolean, nullable=False),
    Column("actor", String(200), nullable=False),
    Column("reason", Text, nullable=False),
    Column("changed_at", DateTime(timezone=True), nullable=False),
    Index("ix_alias_protections_lookup", "specialist", "alias", "position"),
)


# A move of a protected alias waiting for a second actor; decided once (approved or
# rejected) by a row in alias_move_decisions.
alias_move_requests = Table(
    "alias_move_requests",
    metadata,
    Column("request_id", String(36), primary_key=True),
    Column("position", BigInteger, nullable=False),  # of its alias.move_requested event
    Column("specialist", String(100), ForeignKey("specialists.name"), nullable=False),
    Column("alias", String(100), nullable=False),
    Column("kind", String(20), nullable=False),  # move | rollback
    Column("adapter_id", String(ADAPTER_ID)),  # the target (a rollback's, as computed then)
    Column("expected_current", String(ADAPTER_ID)),  # the alias's target when requested
    Column("requested_by", String(200), nullable=False),
    Column("reason", Text, nullable=False),
    Column("requested_at", DateTime(timezone=True), nullable=False),
)


alias_move_decisions = Table(
    "alias_move_decisions",
    metadata,
    Column("request_id", String(36), ForeignKey("alias_move_requests.request_id"),
           primary_key=True),
    Column("position", BigInteger, nullable=False),
    Column("decision", String(20), nullable=False),  # approved | rejected
    Column("actor", String(200), nullable=False),
    Column("reason", Text, nullable=False),
    Column("decided_at", DateTime(timezone=True), nullable=False),
)
