"""SQL tables of dataset manifests: what a run trains on, frozen by content hash (append-only).

``manifest_members`` and ``manifest_contract_versions`` index a manifest's content for
lineage queries ("which manifests hold this reward, this session, this contract
version?"). They are written in the same transaction as the manifest, never changed, and
hold nothing the manifest's hashed content does not: they can be rebuilt from it.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Uuid,
)

from kernel.db import metadata

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


# One row per reward a manifest lists (its subject, session and split): the reverse index
# from experience to the manifests that trained or gated on it.
manifest_members = Table(
    "manifest_members",
    metadata,
    Column("manifest_id", String(36), ForeignKey("dataset_manifests.manifest_id"),
           primary_key=True),
    Column("reward_position", BigInteger, primary_key=True, autoincrement=False),
    Column("reward_id", Uuid, nullable=False),
    Column("subject_id", String(300), nullable=False),
    Column("stream_id", String(200), nullable=False),
    Column("split", String(10), nullable=False),  # train | held_out
    Index("ix_manifest_members_reward", "reward_id"),
    Index("ix_manifest_members_stream", "stream_id"),
)

# How many of a manifest's rewards each contract version judged.
manifest_contract_versions = Table(
    "manifest_contract_versions",
    metadata,
    Column("manifest_id", String(36), ForeignKey("dataset_manifests.manifest_id"),
           primary_key=True),
    Column("contract_name", String(100), primary_key=True),
    Column("contract_version", Integer, primary_key=True),
    Column("reward_count", Integer, nullable=False),
    Index("ix_manifest_contract_versions_version", "contract_name", "contract_version"),
)
