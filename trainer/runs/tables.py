"""SQL table of training runs: the trainer's one mutable projection.

queued -> running -> succeeded | failed, with step and loss; each status change is also
a ``training.*`` event in the log.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
)

from kernel.db import metadata
from trainer.registry.model import ADAPTER_ID_LENGTH as ADAPTER_ID

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
    # What the gate made of the successor (candidate | promoted | rejected): a run that
    # succeeded may still have produced a rejected adapter.
    Column("gate_outcome", String(20)),
    Column("created_by", String(200), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Column("started_at", DateTime(timezone=True)),
    Column("finished_at", DateTime(timezone=True)),
    Index("ix_training_runs_specialist_status", "specialist", "status"),
)
