"""SQL tables of contract versions (a projection of the `contract.*` events in the log).

The log is the source of truth: every change to a version is an event on stream
``contract:<name>``, appended in the same transaction as the row change here. A
published version's document and hash are frozen by a database trigger.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    ForeignKeyConstraint,
    Index,
    Integer,
    String,
    Table,
    Text,
)

from kernel.db import metadata

contract_versions = Table(
    "contract_versions",
    metadata,
    Column("name", String(100), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("parent_version", Integer),  # the version this draft was edited from
    Column("status", String(20), nullable=False),  # draft | published | retired
    Column("document", Text, nullable=False),  # the TOML exactly as written
    Column("content_hash", String(64), nullable=False),  # sha256 of the canonical form
    Column("created_by", String(200), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Column("published_at", DateTime(timezone=True)),
    Column("published_by", String(200)),
    Column("retired_at", DateTime(timezone=True)),
    Column("last_event_position", BigInteger, nullable=False),
    ForeignKeyConstraint(["name", "parent_version"],
                         ["contract_versions.name", "contract_versions.version"]),
)


# Which published version serves each specialist of a contract (what a harness runs):
# append-only, one row per ``contract.serving_moved`` event, keyed by its position, so
# "what served at T" is the latest move at or before the log's last event recorded by T
# (events/cut.py). Several versions may score at once; one serves.
contract_serving_moves = Table(
    "contract_serving_moves",
    metadata,
    Column("position", BigInteger, primary_key=True, autoincrement=False),
    Column("name", String(100), nullable=False),
    Column("specialist", String(100), nullable=False),
    Column("version", Integer),  # NULL: from here on no version serves the specialist
    Column("previous_version", Integer),
    Column("actor", String(200), nullable=False),
    Column("reason", Text, nullable=False),
    Column("moved_at", DateTime(timezone=True), nullable=False),
    ForeignKeyConstraint(["name", "version"], ["contract_versions.name", "contract_versions.version"],
                         name="fk_contract_serving_moves_version"),
    Index("ix_contract_serving_moves_lookup", "name", "specialist", "position"),
)
