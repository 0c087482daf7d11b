"""SQL tables of the triggers: firings (exactly once per work key) and API-set policies.

Both append-only; the latest ``trigger_policies`` row of a specialist is in force.
"""

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
    Text,
    UniqueConstraint,
)

from kernel.db import metadata
from trainer.registry.model import ADAPTER_ID_LENGTH as ADAPTER_ID

trigger_firings = Table(
    "trigger_firings",
    metadata,
    Column("firing_id", String(36), primary_key=True),
    Column("specialist", String(100), ForeignKey("specialists.name"), nullable=False),
    # The parent's adapter id, or 'root': NULLs never collide in a UNIQUE constraint.
    Column("parent_key", String(ADAPTER_ID), nullable=False),
    Column("dataset_cut", BigInteger, nullable=False),  # last reward position included
    Column("policy", String(40), nullable=False),  # count | drift | schedule | manual | forced
    Column("reason", Text, nullable=False),
    Column("run_id", String(36), ForeignKey("training_runs.run_id"), nullable=False),
    Column("fired_by", String(200), nullable=False),
    Column("fired_at", DateTime(timezone=True), nullable=False),
    Column("event_position", BigInteger, nullable=False),
    # 0 for the work's first run; a forced re-run (new hyper-parameters or gate, a reason
    # recorded) takes the next number, so the same data can train again, deliberately.
    Column("rerun", Integer, nullable=False, server_default="0"),
    # THE exactly-once key: one run per (specialist, parent, dataset cut, re-run), whoever fires.
    UniqueConstraint("specialist", "parent_key", "dataset_cut", "rerun",
                     name="uq_trigger_firings_work"),
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
