"""Bodies of the contract routes: versions, history, diff, dry runs, re-evaluation jobs."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.common import INT64_MAX, JsonObject, Out, Timestamp, Version
from evaluators.dryrun import MAX_SUBJECTS

ContractStatus = Literal["draft", "published", "retired"]
JobStatus = Literal["running", "succeeded", "degraded", "failed"]


class DraftIn(BaseModel):
    document: str | None = Field(None, description="The TOML document; omit to copy the parent")
    parent_version: Version | None = Field(None, description="The version this draft edits")


class DocumentIn(BaseModel):
    document: str


class RetireIn(BaseModel):
    reason: str = ""


class DryRunIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    baseline: Version | None = Field(None, description="Version to compare with; default: the "
                                     "draft's parent if published, else the latest published")
    last: int | None = Field(None, ge=1, le=MAX_SUBJECTS, description="The last N finished subjects")
    from_position: int | None = Field(None, ge=1, le=INT64_MAX, description="First position of a range")
    to_position: int | None = Field(None, ge=1, le=INT64_MAX, description="Last position of a range")
    top: int = Field(10, ge=0, le=100, description="How many of the largest movers to list")
    max_error_rate: float | None = Field(
        None, ge=0.0, le=1.0, description="check.passed is false above this share of errored "
        "applicable subjects; default HCP_MAX_ERROR_RATE")


class PublishIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    force: bool = Field(False, description="Publish although the dry run on recent history "
                        "errors above the threshold")
    reason: str = Field("", description="Why it is forced; required with force, recorded in "
                        "the contract.published event")


class ReevaluateIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    from_position: int = Field(1, ge=1, le=INT64_MAX, description="First log position to re-score")


class ContractVersionSummaryOut(Out):
    """``ContractVersion.summary()``: a version without its document."""

    name: str
    version: int
    parent_version: int | None
    status: ContractStatus
    content_hash: str
    created_by: str
    created_at: datetime
    updated_at: datetime
    published_at: datetime | None
    published_by: str | None
    retired_at: datetime | None


class PublishCheckOut(Out):
    """The dry run a version passed (or was forced past) before it was published."""

    subjects: int
    applicable: int
    errors: int
    error_rate: float
    max_error_rate: float
    passed: bool
    samples: list[JsonObject]


class PublishedOut(ContractVersionSummaryOut):
    check: PublishCheckOut | None = Field(description="Null when checks are off "
                                          "(HCP_PUBLISH_CHECK_SUBJECTS=0)")


class ContractVersionOut(ContractVersionSummaryOut):
    document: str = Field(description="The TOML document as written")


class ValidOut(Out):
    valid: Literal[True]


class JsonSchemaOut(Out):
    """A JSON Schema (draft 2020-12) document."""

    schema_uri: str = Field(alias="$schema")
    title: str
    type: str
    properties: JsonObject
    defs: JsonObject | None = Field(None, alias="$defs")


class HistoryEntryOut(Out):
    position: int
    type: str = Field(description="contract.draft_created, contract.draft_edited, contract.published …")
    version: int | None
    actor: str | None
    at: Timestamp
    content_hash: str | None


class ChangeOut(Out):
    section: str = Field(description="contract | harness | evaluation | training")
    item: str = Field(description="criterion | gate | tool | specialist | trigger | prompt | "
                      "skill | setting")
    kind: str = Field(description="added | removed | changed | reweighted | expression_changed | "
                      "text_changed (note: a unified diff)")
    path: str
    old: Any
    new: Any
    note: str


class ContractDiffOut(Out):
    old_hash: str
    new_hash: str
    changes: list[ChangeOut]


class VersionRefOut(Out):
    name: str
    version: int
    status: ContractStatus
    content_hash: str


class SelectionOut(Out):
    last: int | None
    from_position: int | None
    to_position: int | None


class MoverOut(Out):
    subject_id: str
    baseline: float
    draft: float
    delta: float


class DryRunReportOut(Out):
    count: int = Field(description="Subjects evaluated under the draft")
    applicable: int
    scored: int
    errors: int
    baseline_errors: int
    mean: float | None
    baseline_mean: float | None
    compared: int = Field(description="Subjects scored under both versions")
    mean_delta: float | None
    histogram: list[int] = Field(description="Draft scores in 10 equal bins over [0, 1]")
    baseline_histogram: list[int]
    became_eligible: int
    became_ineligible: int
    largest_movers: list[MoverOut]
    error_samples: list[JsonObject]
    error_rate: float = Field(description="Errored share of the applicable subjects")
    criteria: dict[str, JsonObject] = Field(
        description="Per criterion: mean, baseline_mean, mean_delta, compared, errors, "
        "baseline_errors")
    specialists: dict[str, JsonObject] = Field(
        description="Per specialist: count, applicable, scored, errors, error_rate, mean, "
        "baseline_mean, mean_delta, compared")


class DryRunCheckOut(Out):
    max_error_rate: float
    error_rate: float
    passed: bool = Field(description="False: the CLI exits 1, publishing refuses")


class DryRunOut(Out):
    draft: VersionRefOut
    baseline: VersionRefOut | None
    selection: SelectionOut
    subjects: int
    truncated: bool = Field(description="The range held more subjects than a dry run scores")
    report: DryRunReportOut
    check: DryRunCheckOut


class ReevaluationJobOut(Out):
    job_id: str
    contract_name: str
    contract_version: int
    from_position: int
    to_position: int
    done_position: int
    subjects_scored: int = Field(description="Applicable and scored")
    subjects_errored: int = Field(description="Applicable, but the rubric failed: no score")
    subjects_skipped: int = Field(description="Not applicable")
    status: JobStatus
    error: str | None
    started_at: Timestamp
    updated_at: Timestamp
    progress: float = Field(description="Share of the job's positions done, 0..1")


class ContractNameVersionOut(Out):
    name: str
    version: int


class ReevaluationJobsOut(Out):
    contract: ContractNameVersionOut
    jobs: list[ReevaluationJobOut]
