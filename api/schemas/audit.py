"""Bodies of the audit routes: audit reports and jobs, signed checkpoints, proofs. They
mirror ``AuditReport.to_json``, ``AuditJob.to_json``, ``StoredCheckpoint.to_json`` and the
proof bundles' ``to_json`` (``tests/unit/test_response_models.py``)."""

from __future__ import annotations

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


class AuditJobIn(BaseModel):
    scope: str = Field("all", pattern="^(all|adapter)$", description="'all', or 'adapter' with adapter_id")
    adapter_id: str | None = Field(None, max_length=120,
                                   description="SPECIALIST@VERSION, for scope 'adapter'")

    @model_validator(mode="after")
    def _adapter_needs_id(self) -> AuditJobIn:
        if self.scope == "adapter" and not self.adapter_id:
            raise ValueError("adapter_id is required when scope is 'adapter'")
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
