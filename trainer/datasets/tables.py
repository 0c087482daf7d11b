"""SQL table of dataset manifests: what a run trains on, frozen by content hash (append-only)."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    DateTime,
    ForeignKey,
    Integer,
    String,
    Table,
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
