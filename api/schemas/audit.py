"""Bodies of the audit routes: audit reports and jobs, signed checkpoints, proofs. They
mirror ``AuditReport.to_json``, ``AuditJob.to_json``, ``StoredCheckpoint.to_json`` and the
proof bundles' ``to_json`` (``tests/unit/test_response_models.py``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, model_validator

from api.schemas.common import Out, Position, Timestamp, UuidText


class MismatchOut(Out):
    check: str
    subject: str = Field(description="The row or event, named: 'coding@2', 'event 57', 'reward <id> …'")
    message: str


class CheckOut(Out):
    check: str
    table: str = Field(description="The rows checked")
    against: str = Field(description="What they are checked against")
    ok: bool
    checked: int
    mismatches: list[MismatchOut]
    notes: list[str]
    seconds: float


class AuditReportOut(Out):
    scope: str
    ok: bool
    started_at: Timestamp
    finished_at: Timestamp | None
    mismatch_count: int
    checks: list[CheckOut]
    coverage: dict[str, Any] | None = Field(None, description=(
        "Which audit ran and what it covered: kind 'full', or 'incremental' with the checkpoint, "
        "the positions re-hashed, the sample's size and seed"))


class AuditJobIn(BaseModel):
    scope: str = Field("all", pattern="^(all|adapter)$", description="'all', or 'adapter' with adapter_id")
    adapter_id: str | None = Field(None, max_length=120,
                                   description="SPECIALIST@VERSION, for scope 'adapter'")
    since_checkpoint: bool = Field(False, description=(
        "Scope 'all' only: audit what came after the latest signed checkpoint (its signature and "
        "the log's consistency with it first) and a seeded sample of the older rows"))
    sample: int = Field(100, ge=0, le=1_000_000, description="With since_checkpoint: older rows per table")
    sample_manifests: int = Field(2, ge=0, le=100_000, description=(
        "With since_checkpoint: older manifests, each with all its rows and its examples rebuilt"))
    seed: str | None = Field(None, min_length=1, max_length=200, description=(
        "With since_checkpoint: the sample's seed (default: a random one, named in the report)"))

    @model_validator(mode="after")
    def _adapter_needs_id(self) -> AuditJobIn:
        if self.scope == "adapter" and not self.adapter_id:
            raise ValueError("adapter_id is required when scope is 'adapter'")
        if self.scope == "adapter" and self.since_checkpoint:
            raise ValueError("since_checkpoint goes with scope 'all'")
        return self


class AuditJobOut(Out):
    job_id: UuidText
    scope: str
    status: str = Field(description="running | succeeded | failed")
    started_at: Timestamp
    progress: dict[str, list[int]] = Field(description="check -> [done, total]")
    error: str | None
    report: AuditReportOut | None


class CheckpointOut(Out):
    position: Position = Field(description="Its place among the checkpoints (not in the log)")
    origin: str = Field(description="The log's name, also the signing key's")
    tree_size: Position = Field(description="Events covered: positions 1..tree_size")
    root: str = Field(description="RFC 9162 Merkle root of their chain hashes (base64)")
    chain_head: str = Field(description="The chain hash of event tree_size")
    time: Timestamp
    key_id: str
    note: str = Field(description="The signed note itself (C2SP tlog-checkpoint): keep this")


class InclusionOut(Out):
    event_id: UuidText
    position: Position
    checkpoint_position: Position
    event_hash: str
    leaf_index: Position = Field(description="position - 1")
    checkpoint: str = Field(description="The signed note the proof leads to")
    proof: list[str] = Field(description="The audit path, base64 hashes, leaf to root")


class ConsistencyOut(Out):
    old_checkpoint: str
    new_checkpoint: str
    proof: list[str]


class KeyOut(Out):
    vkey: str = Field(description="name+keyid+base64 verifier key (what `hcp audit prove --key` takes)")
    name: str
    key_id: str
    public_pem: str
