"""Models of the HCP API's bodies, generated from its OpenAPI document by
scripts/generate_client_models.py: do not edit (tests/unit/test_client_models.py fails when
this file and the API disagree). Fields the server adds later are kept (extra="allow")."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ApiModel(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class AdapterReached(ApiModel):
    adapter_id: str
    specialist: str
    version: int
    status: str
    generations: int


class AliasAt(ApiModel):
    specialist: str
    alias: str
    adapter_id: str
    moved_at: str
    moved_by: str
    position: int


class AliasMoveIn(ApiModel):
    adapter_id: str | None
    reason: str
    expected_current: str | None = None


class AliasMoveOut(ApiModel):
    position: int
    specialist: str
    alias: str
    adapter_id: str | None
    previous_adapter_id: str | None
    actor: str
    reason: str
    moved_at: str
    kind: str


class AliasPointerOut(ApiModel):
    specialist: str
    alias: str
    adapter_id: str
    at: str | None
    move: AliasMoveOut


class AppendedBatchOut(ApiModel):
    events: list[AppendedOut]


class AppendedOut(ApiModel):
    event_id: str
    stream_id: str
    stream_seq: int
    position: int
    hash: str


class ArtifactFileOut(ApiModel):
    path: str
    sha256: str
    size: int


class ArtifactFilesOut(ApiModel):
    adapter_id: str
    artifact_sha256: str
    address_rule: str
    files: list[ArtifactFileOut]
    base_model: ArtifactsBaseModelOut


class ArtifactOut(ApiModel):
    sha256: str
    uri: str


class ArtifactsBaseModelOut(ApiModel):
    name: str
    path: str | None
    weights_sha256: str


class AsOfOut(ApiModel):
    at: str
    aliases: list[AliasAt]
    contracts: list[ContractAt]


class AuditJobIn(ApiModel):
    scope: str | None = None
    adapter_id: str | None = None
    since_checkpoint: bool | None = None
    sample: int | None = None
    sample_manifests: int | None = None
    seed: str | None = None


class AuditJobOut(ApiModel):
    job_id: str
    scope: str
    status: str
    started_at: str
    progress: dict[str, list[int]]
    error: str | None
    report: AuditReportOut | None


class AuditReportOut(ApiModel):
    scope: str
    ok: bool
    started_at: str
    finished_at: str | None
    mismatch_count: int
    checks: list[CheckOut]
    coverage: dict[str, Any] | None = None


class BaseFileOut(ApiModel):
    path: str
    sha256: str
    size: int


class BaseModelFilesOut(ApiModel):
    name: str
    weights_sha256: str
    artifact_sha256: str
    address_rule: str
    files: list[BaseFileOut]


class BaseModelIn(ApiModel):
    name: str
    path: str


class BaseModelRef(ApiModel):
    name: str
    path: str
    weights_sha256: str


class BaseModelRefOut(ApiModel):
    name: str
    path: str | None
    weights_sha256: str


class CatalogueEntryOut(ApiModel):
    type: str
    summary: str
    current_version: int
    written_by: str
    schemas: dict[str, dict[str, Any]]


class ChangeOut(ApiModel):
    section: str
    item: str
    kind: str
    path: str
    old: Any
    new: Any
    note: str


class ChatCompletionOut(ApiModel):
    """OpenAI's chat.completion (or, streamed, chat.completion.chunk events), and ``hcp``:"""
    id: str
    object: str
    created: int
    model: str
    choices: list[dict[str, Any]]
    usage: dict[str, int]
    hcp: dict[str, Any]


class ChatRequest(ApiModel):
    model: str | None = None
    messages: list[Message]
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: list[str] | None = None
    n: int | None = None
    tools: list[ToolSpec] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    response_format: ResponseFormat | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    user: str | None = None
    hcp: HcpExtension | None = None


class CheckOut(ApiModel):
    check: str
    table: str
    against: str
    ok: bool
    checked: int
    mismatches: list[MismatchOut]
    notes: list[str]
    seconds: float


class CheckpointOut(ApiModel):
    position: int
    origin: str
    tree_size: int
    root: str
    chain_head: str
    time: str
    key_id: str
    note: str


class CompareMoverOut(ApiModel):
    subject_id: str
    baseline: float
    draft: float
    delta: float


class ComparisonOut(ApiModel):
    source: str
    a: VersionOut
    b: VersionOut
    subjects: int
    report: ReportOut


class ConsistencyOut(ApiModel):
    old_checkpoint: str
    new_checkpoint: str
    proof: list[str]


class ContractAt(ApiModel):
    name: str
    version: int
    content_hash: str
    published_at: str


class ContractDiffOut(ApiModel):
    old_hash: str
    new_hash: str
    changes: list[ChangeOut]


class ContractNameVersionOut(ApiModel):
    name: str
    version: int


class ContractVersionOut(ApiModel):
    name: str
    version: int
    parent_version: int | None
    status: str
    content_hash: str
    created_by: str
    created_at: str
    updated_at: str
    published_at: str | None
    published_by: str | None
    retired_at: str | None
    document: str


class ContractVersionRef(ApiModel):
    name: str
    version: int
    content_hash: str | None


class ContractVersionSummaryOut(ApiModel):
    """``ContractVersion.summary()``: a version without its document."""
    name: str
    version: int
    parent_version: int | None
    status: str
    content_hash: str
    created_by: str
    created_at: str
    updated_at: str
    published_at: str | None
    published_by: str | None
    retired_at: str | None


class ContractsMoverOut(ApiModel):
    subject_id: str
    baseline: float
    draft: float
    delta: float


class DecisionIn(ApiModel):
    reason: str | None = None


class DeliveryOut(ApiModel):
    delivery_id: str
    subscription_id: str
    event_id: str
    position: int
    event_type: str
    attempt: int
    status: str
    redelivery: bool
    response_status: int | None
    error: str | None
    duration_ms: float | None
    requested_by: str | None
    created_at: str
    finished_at: str | None


class DeliveryPage(ApiModel):
    deliveries: list[DeliveryOut]
    next_before: str | None


class DependencyOut(ApiModel):
    status: str
    latency_ms: float
    error: str | None


class DocumentIn(ApiModel):
    document: str


class DownstreamOut(ApiModel):
    source: SourceOut
    rewards: RewardsReached
    manifests: list[ManifestReached]
    adapters: list[AdapterReached]
    windows: list[WindowOut]


class DraftIn(ApiModel):
    document: str | None = None
    parent_version: int | None = None


class DryRunAcceptedOut(ApiModel):
    job: DryRunJobOut


class DryRunCheckOut(ApiModel):
    max_error_rate: float
    error_rate: float
    passed: bool


class DryRunIn(ApiModel):
    baseline: int | None = None
    last: int | None = None
    from_position: int | None = None
    to_position: int | None = None
    top: int | None = None
    max_error_rate: float | None = None


class DryRunJobOut(ApiModel):
    """A dry run as a job: its progress and, once it succeeded, its report."""
    job_id: str
    contract_name: str
    contract_version: int
    baseline_version: int | None
    selection: dict[str, Any]
    top: int
    tenant: str | None
    created_by: str
    status: str
    done: int
    total: int
    progress: float
    result: DryRunOut | None
    error: str | None
    created_at: str
    updated_at: str


class DryRunOut(ApiModel):
    """A dry run; over HTTP also ``job_id``, the job that ran it (``GET /v1/dry-runs/{job_id}``)."""
    draft: VersionRefOut
    baseline: VersionRefOut | None
    selection: SelectionOut
    subjects: int
    truncated: bool
    stopped: str | None
    tenant: str | None
    report: DryRunReportOut
    check: DryRunCheckOut


class DryRunReportOut(ApiModel):
    count: int
    applicable: int
    scored: int
    errors: int
    baseline_errors: int
    mean: float | None
    baseline_mean: float | None
    compared: int
    mean_delta: float | None
    histogram: list[int]
    baseline_histogram: list[int]
    became_eligible: int
    became_ineligible: int
    largest_movers: list[ContractsMoverOut]
    error_samples: list[dict[str, Any]]
    error_rate: float
    criteria: dict[str, dict[str, Any]]
    specialists: dict[str, dict[str, Any]]


class EndIn(ApiModel):
    outcome: str
    score: float | None = None


class ErrorDetail(ApiModel):
    code: str
    message: str
    field: str | None = None


class ErrorOut(ApiModel):
    """The one error body of every 4xx and 5xx (api/errors.py)."""
    error: ErrorDetail


class EventBatchIn(ApiModel):
    events: list[EventIn]


class EventIn(ApiModel):
    stream_id: str
    type: str
    payload: dict[str, Any]
    schema_version: int | None = None
    event_id: str | None = None
    expected_seq: int | None = None
    metadata: MetadataIn | None = None


class EventMetadataOut(ApiModel):
    """Also ``claimed_actor`` (what the client sent as actor, unchecked), only on events"""
    occurred_at: str | None
    recorded_at: str
    actor: str | None
    tenant: str | None
    specialist: str | None
    adapter_version: str | None
    contract: str | None
    causation_id: str | None
    correlation_id: str | None


class EventPage(ApiModel):
    events: list[RecordedEventOut]
    next_after: int
    head: int


class EventRef(ApiModel):
    event_id: str
    stream_id: str
    stream_seq: int
    position: int
    type: str
    recorded_at: str
    hash: str


class EventTypeOut(ApiModel):
    type: str
    scope: str
    operator_only: bool
    summary: str


class FeedbackIn(ApiModel):
    session: str
    completion_id: str | None = None
    rating: float | None = None
    thumbs: str | None = None
    comment: str | None = None
    correction: str | None = None
    end: EndIn | None = None


class FeedbackOut(ApiModel):
    session: str
    recorded: list[RecordedOut]


class FireIn(ApiModel):
    parent: str | None = None
    base_model: str | None = None
    reason: str | None = None
    force: bool | None = None
    hyper: dict[str, Any] | None = None


class FiredOut(ApiModel):
    firing: FiringOut
    run: TrainingRunOut


class FiringOut(ApiModel):
    firing_id: str
    specialist: str
    parent_key: str
    dataset_cut: int
    policy: str
    reason: str
    run_id: str
    fired_by: str
    fired_at: str
    rerun: int | None = None
    created: bool
    dispatched: bool


class FunctionCall(ApiModel):
    name: str
    arguments: str | None = None


class FunctionSpec(ApiModel):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class GateAnswerOut(ApiModel):
    answer: str | None
    reward: float | None


class GateCaseOut(ApiModel):
    index: int
    subject_id: str
    successor: GateAnswerOut
    parent: GateAnswerOut


class GateCasesOut(ApiModel):
    adapter_id: str
    total: int
    cases: list[GateCaseOut]
    next_after: int | None
    error_samples: dict[str, list[str]]


class GatePolicy(ApiModel):
    margin: float | None = None
    regression_tolerance: dict[str, float] | None = None
    auto_promote: bool | None = None
    alias: str | None = None
    metric: str | None = None
    rollout_harness: str | None = None
    rollout_max_new_tokens: int | None = None
    rollout_prompts: int | None = None
    test: str | None = None
    confidence: float | None = None
    resamples: int | None = None
    seed: int | None = None
    offline_beside: bool | None = None
    probe_tasks: int | None = None
    probe_margin: float | None = None
    probe_power: float | None = None


class HarnessConfigOut(ApiModel):
    contract: ServingContractRefOut
    specialist: str
    base_model: str
    base_model_digest: str | None
    adapter_alias: str
    adapter: ServingAdapterOut
    slot: dict[str, Any]
    router: dict[str, Any]
    tools: list[str]
    hooks: list[dict[str, Any]]
    prompts: dict[str, TextOut]
    skills: dict[str, TextOut]
    config_hash: str


class HcpExtension(ApiModel):
    task: dict[str, Any] | None = None
    stop_after: str | None = None


class HealthOut(ApiModel):
    status: str
    mode: str
    checks: dict[str, DependencyOut]


class HistoryEntryOut(ApiModel):
    position: int
    type: str
    version: int | None
    actor: str | None
    at: str
    content_hash: str | None


class InclusionOut(ApiModel):
    event_id: str
    position: int
    checkpoint_position: int
    event_hash: str
    leaf_index: int
    checkpoint: str
    proof: list[str]


class JsonSchemaFormat(ApiModel):
    name: str | None = None
    description: str | None = None
    schema_: dict[str, Any] | None = Field(None, alias='schema')
    strict: bool | None = None


class JsonSchemaOut(ApiModel):
    """A JSON Schema (draft 2020-12) document."""
    field__schema: str = Field(alias='$schema')
    title: str
    type: str
    properties: dict[str, Any]
    field__defs: dict[str, Any] | None = Field(None, alias='$defs')


class JudgementOut(ApiModel):
    judge: str
    model: str
    prompt_hash: str
    seed: int
    verdict: str
    verdict_event: str | None
    score: float | None
    scores: list[float] | None = None
    error: str | None


class KeyOut(ApiModel):
    vkey: str
    name: str
    key_id: str
    public_pem: str


class LineageLinkOut(ApiModel):
    adapter_id: str
    specialist: str
    version: int
    status: str
    parent_adapter_id: str | None
    training_run_id: str
    registered_at: str
    base_model: LinkBaseModelOut
    manifest: LinkManifestOut
    contract_versions: list[RegistryContractRefOut]
    hyper: dict[str, Any]
    artifact: LinkArtifactOut
    verified: bool


class LineageOut(ApiModel):
    adapter_id: str
    verified: bool
    chain: list[LineageLinkOut]


class LinkArtifactOut(ApiModel):
    sha256: str
    uri: str | None
    verified: bool
    note: str | None


class LinkBaseModelOut(ApiModel):
    name: str
    weights_sha256: str
    verified: bool | None


class LinkManifestOut(ApiModel):
    manifest_id: str
    content_hash: str
    examples_sha256: str
    reward_count: int
    example_count: int
    split: dict[str, int]
    cut_from: int
    cut_to: int
    verified: bool
    rebuilt: bool | None


class ManifestOut(ApiModel):
    manifest_id: str
    specialist: str
    content_hash: str
    examples_sha256: str
    cut_from: int
    cut_to: int
    reward_count: int
    split: dict[str, int]
    contract_versions: list[ContractVersionRef]
    created_at: str
    verified: bool
    adapters: list[str]


class ManifestReached(ApiModel):
    manifest_id: str
    specialist: str
    content_hash: str
    members: int
    adapters: list[str]


class ManifestRef(ApiModel):
    manifest_id: str
    specialist: str
    content_hash: str
    examples_sha256: str
    cut_from: int
    cut_to: int
    reward_count: int
    split: dict[str, int]
    contract_versions: list[ContractVersionRef]


class MemberOut(ApiModel):
    manifest_id: str
    reward_position: int
    reward_id: str
    subject_id: str
    stream_id: str
    split: str


class MembersPage(ApiModel):
    manifest_id: str
    members: list[MemberOut]
    next_after: int | None


class Message(ApiModel):
    role: str
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None


class MetadataIn(ApiModel):
    occurred_at: str | None = None
    actor: str | None = None
    tenant: str | None = None
    specialist: str | None = None
    adapter_version: str | None = None
    contract: str | None = None
    causation_id: str | None = None
    correlation_id: str | None = None


class MismatchOut(ApiModel):
    check: str
    subject: str
    message: str


class ModelListOut(ApiModel):
    object: str
    data: list[dict[str, Any]]


class ModelOut(ApiModel):
    id: str
    object: str
    created: int
    owned_by: str
    hcp: dict[str, Any]


class MoveRequestOut(ApiModel):
    request_id: str
    specialist: str
    alias: str
    kind: str
    adapter_id: str | None
    expected_current: str | None
    requested_by: str
    reason: str
    requested_at: str
    status: str
    decided_by: str | None


class PolicyOut(ApiModel):
    specialist: str
    source: str
    author: str | None = None
    policy: TriggerPolicyOut
    resolved: ResolvedPolicyOut


class PolicyStateOut(ApiModel):
    specialist: str
    source: str
    author: str | None = None
    policy: TriggerPolicyOut
    resolved: ResolvedPolicyOut
    state: SpecialistStateOut


class PromoteIn(ApiModel):
    reason: str
    alias: str | None = None


class ProtectionIn(ApiModel):
    protected: bool
    reason: str


class ProtectionOut(ApiModel):
    specialist: str
    alias: str
    protected: bool


class ProvJsonOut(ApiModel):
    """A PROV-JSON document (https://www.w3.org/submissions/prov-json/)."""
    prefix: dict[str, str]
    entity: dict[str, Any] | None = None
    activity: dict[str, Any] | None = None


class PublishCheckOut(ApiModel):
    """The dry run a version passed (or was forced past) before it was published."""
    subjects: int
    applicable: int
    errors: int
    error_rate: float
    max_error_rate: float
    passed: bool
    samples: list[dict[str, Any]]


class PublishIn(ApiModel):
    force: bool | None = None
    reason: str | None = None


class PublishedOut(ApiModel):
    name: str
    version: int
    parent_version: int | None
    status: str
    content_hash: str
    created_by: str
    created_at: str
    updated_at: str
    published_at: str | None
    published_by: str | None
    retired_at: str | None
    check: PublishCheckOut | None


class QueriedContractOut(ApiModel):
    name: str
    version: int | None


class ReasonIn(ApiModel):
    reason: str


class RecordOut(ApiModel):
    member: MemberOut
    reward: dict[str, Any]
    events: list[EventRef]


class RecordedEventOut(ApiModel):
    """``RecordedEvent.to_json()``: the payload upcast to the type's current version."""
    event_id: str
    stream_id: str
    stream_seq: int
    position: int
    type: str
    schema_version: int
    payload: dict[str, Any]
    metadata: EventMetadataOut
    payload_digest: str
    prev_hash: str
    hash: str


class RecordedOut(ApiModel):
    event_id: str
    type: str


class RecordsPage(ApiModel):
    adapter_id: str
    manifest_id: str
    total: int
    records: list[RecordOut]
    next_after: int | None


class ReevaluateIn(ApiModel):
    from_position: int | None = None


class ReevaluationJobOut(ApiModel):
    job_id: str
    contract_name: str
    contract_version: int
    from_position: int
    to_position: int
    done_position: int
    subjects_scored: int
    subjects_errored: int
    subjects_skipped: int
    status: str
    error: str | None
    started_at: str
    updated_at: str
    progress: float


class ReevaluationJobsOut(ApiModel):
    contract: ContractNameVersionOut
    jobs: list[ReevaluationJobOut]


class RegistryAdapterOut(ApiModel):
    adapter_id: str
    specialist: str
    version: int
    parent_adapter_id: str | None
    base_model: str
    training_run_id: str
    manifest_id: str
    hyper: dict[str, Any]
    metrics: dict[str, Any]
    artifact_sha256: str
    artifact_uri: str | None
    registered_status: str
    status: str
    registered_by: str
    registered_at: str
    contract_versions: list[RegistryContractRefOut]


class RegistryBaseModelOut(ApiModel):
    name: str
    path: str | None
    weights_sha256: str
    config: dict[str, Any]
    registered_by: str
    registered_at: str
    source: dict[str, Any] | None = None


class RegistryContractRefOut(ApiModel):
    name: str
    version: int
    content_hash: str | None


class ReportOut(ApiModel):
    count: int
    applicable: int
    scored: int
    errors: int
    baseline_errors: int
    error_rate: float
    mean: float | None
    baseline_mean: float | None
    compared: int
    mean_delta: float | None
    histogram: list[int]
    baseline_histogram: list[int]
    became_eligible: int
    became_ineligible: int
    largest_movers: list[CompareMoverOut]
    error_samples: list[dict[str, Any]]
    criteria: dict[str, dict[str, Any]]
    specialists: dict[str, dict[str, Any]]


class RequestIn(ApiModel):
    adapter_id: str | None = None
    rollback: bool | None = None
    reason: str


class ResolvedOut(ApiModel):
    specialist: str
    alias: str
    adapter_id: str
    version: int
    artifact_sha256: str
    artifact_uri: str | None
    base_model: BaseModelRefOut
    moved_at: str


class ResolvedPolicyOut(ApiModel):
    contract: str | None
    base_model: str | None
    gate: GatePolicy


class ResponseFormat(ApiModel):
    type: str
    json_schema: JsonSchemaFormat | None = None


class RetireIn(ApiModel):
    reason: str | None = None


class RetryIn(ApiModel):
    reason: str | None = None


class RewardContractOut(ApiModel):
    name: str
    version: int
    content_hash: str


class RewardFloor(ApiModel):
    threshold: float
    window: int


class RewardFloorOut(ApiModel):
    threshold: float
    window: int


class RewardOut(ApiModel):
    reward_id: str
    position: int | None
    subject: RewardSubjectOut
    contract: RewardContractOut
    evaluator_version: str
    score: float | None
    components: dict[str, float]
    gates: dict[str, bool]
    split: str
    specialist: str | None
    adapter_version: str | None
    eligible: bool
    tenant: str | None = None
    errors: list[dict[str, str]]
    created_at: str
    prev_hash: str | None
    hash: str | None
    judgements: list[JudgementOut] | None = None


class RewardPageOut(ApiModel):
    rewards: list[RewardOut]
    contract: QueriedContractOut | None
    next_after: int
    head: int


class RewardRef(ApiModel):
    reward_id: str
    position: int
    subject_id: str
    stream_id: str
    contract: str
    score: float | None
    split: str


class RewardSubjectOut(ApiModel):
    id: str
    kind: str
    stream_id: str
    first_position: int
    last_position: int
    event_ids: list[str]


class RewardsReached(ApiModel):
    count: int
    items: list[RewardRef]
    next_after: int | None


class RunRef(ApiModel):
    run_id: str
    status: str
    created_by: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    attempts: int
    hyper: dict[str, Any]


class SelectionOut(ApiModel):
    last: int | None
    from_position: int | None
    to_position: int | None


class ServeIn(ApiModel):
    version: int
    specialist: str | None = None
    reason: str


class ServingAdapterOut(ApiModel):
    alias: str
    adapter_id: str | None


class ServingContractRefOut(ApiModel):
    name: str
    version: int
    content_hash: str


class ServingMoveOut(ApiModel):
    position: int
    name: str
    specialist: str
    version: int | None
    previous_version: int | None
    actor: str
    reason: str
    moved_at: str


class ServingOut(ApiModel):
    name: str
    at: str | None
    serving: dict[str, ServingMoveOut]
    scoring: list[int]


class SourceOut(ApiModel):
    kind: str
    id: str


class SpecialistAliasesOut(ApiModel):
    name: str
    description: str
    created_by: str
    created_at: str
    aliases: dict[str, str | None]


class SpecialistIn(ApiModel):
    name: str
    description: str | None = None


class SpecialistOut(ApiModel):
    name: str
    description: str
    created_by: str
    created_at: str


class SpecialistStateOut(ApiModel):
    specialist: str
    parent_adapter_id: str | None
    parent_cut: int
    eligible_head: int
    new_eligible: int
    production_mean: float | None
    production_count: int
    last_fired_at: str | None
    now: str
    counted_from: int
    rejections: int
    rejected_at: str | None


class StartIn(ApiModel):
    parent: str | None = None
    base_model: str | None = None
    reason: str | None = None
    force: bool | None = None
    hyper: dict[str, Any] | None = None
    specialist: str


class StreamOptions(ApiModel):
    include_usage: bool | None = None


class TextOut(ApiModel):
    digest: str
    text: str | None


class ToolCallIn(ApiModel):
    id: str
    type: str | None = None
    function: FunctionCall


class ToolSpec(ApiModel):
    type: str | None = None
    function: FunctionSpec


class TrainingRunOut(ApiModel):
    run_id: str
    specialist: str
    parent_adapter_id: str | None
    base_model: str
    manifest_id: str
    firing_id: str
    hyper: dict[str, Any]
    gate: dict[str, Any]
    status: str
    step: int
    total_steps: int
    last_loss: float | None
    error: str | None
    attempts: int
    lease_owner: str | None
    lease_until: str | None
    adapter_id: str | None
    created_by: str
    created_at: str
    updated_at: str
    started_at: str | None
    finished_at: str | None
    gate_outcome: str | None = None


class TriggerCheckOut(ApiModel):
    specialist: str
    note: str
    firing: FiringOut | None


class TriggerPolicy(ApiModel):
    """When to train a specialist's successor (the first enabled rule that fires) and how."""
    enabled: bool | None = None
    min_new_rewards: int | None = None
    reward_floor: RewardFloor | None = None
    schedule: str | None = None
    auto_promote: bool | None = None
    gate_margin: float | None = None
    regression_tolerance: dict[str, float] | None = None
    gate_metric: str | None = None
    rollout_max_new_tokens: int | None = None
    rollout_harness: str | None = None
    rollout_prompts: int | None = None
    dataset: str | None = None
    base_model: str | None = None
    hyper: dict[str, Any] | None = None
    alias: str | None = None
    contract: str | None = None
    backoff_factor: float | None = None
    backoff_wait: str | None = None
    gate_test: str | None = None
    gate_confidence: float | None = None
    gate_resamples: int | None = None
    gate_seed: int | None = None
    gate_offline: bool | None = None
    gate_probes: int | None = None
    gate_probe_margin: float | None = None
    gate_probe_power: float | None = None


class TriggerPolicyOut(ApiModel):
    """``TriggerPolicy`` as written. Keys added later are absent while at their defaults"""
    enabled: bool | None = None
    min_new_rewards: int | None = None
    reward_floor: RewardFloorOut | None = None
    schedule: str | None = None
    auto_promote: bool | None = None
    gate_margin: float | None = None
    regression_tolerance: dict[str, float] | None = None
    gate_metric: str | None = None
    rollout_max_new_tokens: int | None = None
    rollout_harness: str | None = None
    rollout_prompts: int | None = None
    dataset: str | None = None
    base_model: str | None = None
    hyper: dict[str, Any] | None = None
    alias: str | None = None
    contract: str | None = None
    backoff_factor: float | None = None
    backoff_wait: str | None = None
    gate_test: str | None = None
    gate_confidence: float | None = None
    gate_resamples: int | None = None
    gate_seed: int | None = None
    gate_offline: bool | None = None


class TriggerRef(ApiModel):
    firing_id: str
    policy: str
    reason: str
    fired_by: str
    fired_at: str
    dataset_cut: int


class UpstreamOut(ApiModel):
    adapter_id: str
    root_id: str
    versions: list[VersionLineage]


class ValidOut(ApiModel):
    valid: bool


class VerifyOut(ApiModel):
    intact: bool
    checked: int
    last_position: int
    first_break_position: int | None
    reason: str | None


class VersionLineage(ApiModel):
    """One adapter version as an auditor reads it: what made it, from what, and the gate."""
    adapter_id: str
    specialist: str
    version: int
    depth: int
    parent_adapter_id: str | None
    status: str
    registered_status: str
    registered_by: str
    registered_at: str
    artifact: ArtifactOut
    run: RunRef | None
    trigger: TriggerRef | None
    manifest: ManifestRef | None
    contract_versions: list[ContractVersionRef]
    base_model: BaseModelRef | None
    gate: dict[str, Any] | None


class VersionOut(ApiModel):
    name: str
    version: int
    status: str
    content_hash: str


class VersionRefOut(ApiModel):
    name: str
    version: int
    status: str
    content_hash: str


class WebhookIn(ApiModel):
    url: str
    event_types: list[str]
    secret: str
    tenant: str | None = None
    description: str | None = None


class WebhookList(ApiModel):
    webhooks: list[WebhookOut]


class WebhookOut(ApiModel):
    subscription_id: str
    url: str
    event_types: list[str]
    tenant: str | None
    description: str
    status: str
    status_reason: str | None
    created_by: str
    created_at: str
    from_position: int


class WindowOut(ApiModel):
    specialist: str
    alias: str
    adapter_id: str
    since: str
    until: str | None
    since_position: int
    until_position: int | None


AdapterReached.model_rebuild()
AliasAt.model_rebuild()
AliasMoveIn.model_rebuild()
AliasMoveOut.model_rebuild()
AliasPointerOut.model_rebuild()
AppendedBatchOut.model_rebuild()
AppendedOut.model_rebuild()
ArtifactFileOut.model_rebuild()
ArtifactFilesOut.model_rebuild()
ArtifactOut.model_rebuild()
ArtifactsBaseModelOut.model_rebuild()
AsOfOut.model_rebuild()
AuditJobIn.model_rebuild()
AuditJobOut.model_rebuild()
AuditReportOut.model_rebuild()
BaseFileOut.model_rebuild()
BaseModelFilesOut.model_rebuild()
BaseModelIn.model_rebuild()
BaseModelRef.model_rebuild()
BaseModelRefOut.model_rebuild()
CatalogueEntryOut.model_rebuild()
ChangeOut.model_rebuild()
ChatCompletionOut.model_rebuild()
ChatRequest.model_rebuild()
CheckOut.model_rebuild()
CheckpointOut.model_rebuild()
CompareMoverOut.model_rebuild()
ComparisonOut.model_rebuild()
ConsistencyOut.model_rebuild()
ContractAt.model_rebuild()
ContractDiffOut.model_rebuild()
ContractNameVersionOut.model_rebuild()
ContractVersionOut.model_rebuild()
ContractVersionRef.model_rebuild()
ContractVersionSummaryOut.model_rebuild()
ContractsMoverOut.model_rebuild()
DecisionIn.model_rebuild()
DeliveryOut.model_rebuild()
DeliveryPage.model_rebuild()
DependencyOut.model_rebuild()
DocumentIn.model_rebuild()
DownstreamOut.model_rebuild()
DraftIn.model_rebuild()
DryRunAcceptedOut.model_rebuild()
DryRunCheckOut.model_rebuild()
DryRunIn.model_rebuild()
DryRunJobOut.model_rebuild()
DryRunOut.model_rebuild()
DryRunReportOut.model_rebuild()
EndIn.model_rebuild()
ErrorDetail.model_rebuild()
ErrorOut.model_rebuild()
EventBatchIn.model_rebuild()
EventIn.model_rebuild()
EventMetadataOut.model_rebuild()
EventPage.model_rebuild()
EventRef.model_rebuild()
EventTypeOut.model_rebuild()
FeedbackIn.model_rebuild()
FeedbackOut.model_rebuild()
FireIn.model_rebuild()
FiredOut.model_rebuild()
FiringOut.model_rebuild()
FunctionCall.model_rebuild()
FunctionSpec.model_rebuild()
GateAnswerOut.model_rebuild()
GateCaseOut.model_rebuild()
GateCasesOut.model_rebuild()
GatePolicy.model_rebuild()
HarnessConfigOut.model_rebuild()
HcpExtension.model_rebuild()
HealthOut.model_rebuild()
HistoryEntryOut.model_rebuild()
InclusionOut.model_rebuild()
JsonSchemaFormat.model_rebuild()
JsonSchemaOut.model_rebuild()
JudgementOut.model_rebuild()
KeyOut.model_rebuild()
LineageLinkOut.model_rebuild()
LineageOut.model_rebuild()
LinkArtifactOut.model_rebuild()
LinkBaseModelOut.model_rebuild()
LinkManifestOut.model_rebuild()
ManifestOut.model_rebuild()
ManifestReached.model_rebuild()
ManifestRef.model_rebuild()
MemberOut.model_rebuild()
MembersPage.model_rebuild()
Message.model_rebuild()
MetadataIn.model_rebuild()
MismatchOut.model_rebuild()
ModelListOut.model_rebuild()
ModelOut.model_rebuild()
MoveRequestOut.model_rebuild()
PolicyOut.model_rebuild()
PolicyStateOut.model_rebuild()
PromoteIn.model_rebuild()
ProtectionIn.model_rebuild()
ProtectionOut.model_rebuild()
ProvJsonOut.model_rebuild()
PublishCheckOut.model_rebuild()
PublishIn.model_rebuild()
PublishedOut.model_rebuild()
QueriedContractOut.model_rebuild()
ReasonIn.model_rebuild()
RecordOut.model_rebuild()
RecordedEventOut.model_rebuild()
RecordedOut.model_rebuild()
RecordsPage.model_rebuild()
ReevaluateIn.model_rebuild()
ReevaluationJobOut.model_rebuild()
ReevaluationJobsOut.model_rebuild()
RegistryAdapterOut.model_rebuild()
RegistryBaseModelOut.model_rebuild()
RegistryContractRefOut.model_rebuild()
ReportOut.model_rebuild()
RequestIn.model_rebuild()
ResolvedOut.model_rebuild()
ResolvedPolicyOut.model_rebuild()
ResponseFormat.model_rebuild()
RetireIn.model_rebuild()
RetryIn.model_rebuild()
RewardContractOut.model_rebuild()
RewardFloor.model_rebuild()
RewardFloorOut.model_rebuild()
RewardOut.model_rebuild()
RewardPageOut.model_rebuild()
RewardRef.model_rebuild()
RewardSubjectOut.model_rebuild()
RewardsReached.model_rebuild()
RunRef.model_rebuild()
SelectionOut.model_rebuild()
ServeIn.model_rebuild()
ServingAdapterOut.model_rebuild()
ServingContractRefOut.model_rebuild()
ServingMoveOut.model_rebuild()
ServingOut.model_rebuild()
SourceOut.model_rebuild()
SpecialistAliasesOut.model_rebuild()
SpecialistIn.model_rebuild()
SpecialistOut.model_rebuild()
SpecialistStateOut.model_rebuild()
StartIn.model_rebuild()
StreamOptions.model_rebuild()
TextOut.model_rebuild()
ToolCallIn.model_rebuild()
ToolSpec.model_rebuild()
TrainingRunOut.model_rebuild()
TriggerCheckOut.model_rebuild()
TriggerPolicy.model_rebuild()
TriggerPolicyOut.model_rebuild()
TriggerRef.model_rebuild()
UpstreamOut.model_rebuild()
ValidOut.model_rebuild()
VerifyOut.model_rebuild()
VersionLineage.model_rebuild()
VersionOut.model_rebuild()
VersionRefOut.model_rebuild()
WebhookIn.model_rebuild()
WebhookList.model_rebuild()
WebhookOut.model_rebuild()
WindowOut.model_rebuild()
