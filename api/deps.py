"""Dependencies shared by the routes: the services of the container, and principals whose
scopes were checked. Routes take what they use by type; nothing here builds a service."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from access.principal import Principal
from api.metrics import Metrics
from audit.asof import AsOf
from audit.auditor import Auditor
from audit.checkpoint_store import CheckpointStore
from audit.downstream import Downstream
from audit.jobs import AuditJobs
from audit.lineage import Lineage
from audit.proofs import Proofs
from audit.signer import CheckpointSigner
from audit.upstream import Upstream
from contract.serving import ContractServing
from contract.versions import ContractVersions
from evaluators.comparison import Comparisons
from evaluators.dryrun import DryRuns
from evaluators.dryrun_jobs import DryRunJobs
from evaluators.publishing import Publisher
from evaluators.reevaluation import Reevaluations
from evaluators.rewards import RewardStore
from events.ingest import ReferenceCheck
from events.store import Appender, EventStore
from hcp.bootstrap import Container
from hcp.settings import Settings
from inference.resolve import Resolver
from integrations.downloads import DownloadDirs
from trainer.registry.aliases import Aliases
from trainer.registry.approvals import Approvals
from trainer.registry.artifacts import ArtifactStore
from trainer.registry.registry import Registry
from trainer.runs.store import Runs
from trainer.triggers.firing import Triggers
from trainer.triggers.sources import Policies

bearer = HTTPBearer(auto_error=False, description="An API key from `hcp keys create`")


# Dependencies that do no I/O are ``async def``: FastAPI runs a plain ``def`` dependency
# in the thread pool, a hand-off that cost more than the rest of a single-event POST's
# dependencies together.


async def get_container(request: Request) -> Container:
    container: Container = request.app.state.container
    return container


ContainerDep = Annotated[Container, Depends(get_container)]


def _service(name: str) -> Any:
    async def get(container: ContainerDep) -> Any:
        return getattr(container, name)

    return Depends(get)


async def _metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


@dataclass(frozen=True)
class EventWriting:
    """What POST /v1/events uses, as one dependency: FastAPI's solving of each dependency
    (and of the container under each) cost a tenth of a single-event POST."""

    appender: Appender
    settings: Settings
    metrics: Metrics
    references: ReferenceCheck


async def event_writing(request: Request) -> EventWriting:
    """The services of POST /v1/events, built once per container."""
    state = request.app.state
    writing: EventWriting | None = getattr(state, "event_writing", None)
    if writing is None or writing.appender is not state.container.appender:
        container = state.container
        writing = state.event_writing = EventWriting(
            container.appender, container.settings, state.metrics, container.references)
    return writing


EventWritingDep = Annotated[EventWriting, Depends(event_writing)]
SettingsDep = Annotated[Settings, _service("settings")]
MetricsDep = Annotated[Metrics, Depends(_metrics)]
StoreDep = Annotated[EventStore, _service("store")]
AppenderDep = Annotated[Appender, _service("appender")]
ReferencesDep = Annotated[ReferenceCheck, _service("references")]
ContractsDep = Annotated[ContractVersions, _service("contracts")]
ServingDep = Annotated[ContractServing, _service("serving")]
RewardsDep = Annotated[RewardStore, _service("rewards")]
DryRunsDep = Annotated[DryRuns, _service("dry_runs")]
PublisherDep = Annotated[Publisher, _service("publisher")]
ComparisonsDep = Annotated[Comparisons, _service("comparisons")]
DryRunJobsDep = Annotated[DryRunJobs, _service("dry_run_jobs")]
ReevaluationsDep = Annotated[Reevaluations, _service("reevaluations")]
RegistryDep = Annotated[Registry, _service("registry")]
AliasesDep = Annotated[Aliases, _service("aliases")]
ApprovalsDep = Annotated[Approvals, _service("approvals")]
ResolverDep = Annotated[Resolver, _service("resolver")]
ArtifactsDep = Annotated[ArtifactStore, _service("artifacts")]
DownloadsDep = Annotated[DownloadDirs, _service("downloads")]
LineageDep = Annotated[Lineage, _service("lineage")]
UpstreamDep = Annotated[Upstream, _service("upstream")]
DownstreamDep = Annotated[Downstream, _service("downstream")]
AsOfDep = Annotated[AsOf, _service("as_of")]
RunsDep = Annotated[Runs, _service("runs")]
PoliciesDep = Annotated[Policies, _service("policies")]
TriggersDep = Annotated[Triggers, _service("triggers")]
AuditorDep = Annotated[Auditor, _service("auditor")]
AuditJobsDep = Annotated[AuditJobs, _service("audit_jobs")]
ProofsDep = Annotated[Proofs, _service("proofs")]
CheckpointStoreDep = Annotated[CheckpointStore, _service("checkpoint_store")]
SignerDep = Annotated[CheckpointSigner, _service("checkpoint_signer")]


def require(*scopes: str, operator_only: bool = False) -> Callable[..., Any]:
    """A dependency that admits only keys holding every one of ``scopes`` (or ``admin``);
    ``operator_only``: and only keys without a tenant (shared state: contracts, the
    registry, training, the whole log)."""

    async def check(
        request: Request,
        container: ContainerDep,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> Principal:
        if credentials is None:
            raise HTTPException(401, "missing API key: send Authorization: Bearer <key>",
                                headers={"WWW-Authenticate": "Bearer"})
        # The gate (api/gate.py) authenticated this request's key already; asking again
        # cost a second key lookup per request. Without the gate, authenticate here.
        principal: Principal | None = getattr(request.state, "principal", None)
        if principal is None:
            principal = await run_in_threadpool(container.keys.authenticate, credentials.credentials)
        if principal is None:
            raise HTTPException(401, "unknown or malformed API key",
                                headers={"WWW-Authenticate": "Bearer"})
        for scope in scopes:
            if not principal.allows(scope):
                raise HTTPException(403, f"this key lacks the scope '{scope}'")
        if operator_only and not principal.operator:
            raise HTTPException(403, f"this key acts for tenant '{principal.tenant}'; "
                                "only an operator key (one without a tenant) may do this")
        return principal

    return check


# One alias per scope, so a route's signature says what it needs. docs/security.md says
# who may do what; reads a tenant's key may make are filtered to its tenant by the route.
EventsWrite = Annotated[Principal, Depends(require("events:write"))]
EventsRead = Annotated[Principal, Depends(require("events:read"))]
AuditRead = Annotated[Principal, Depends(require("audit:read", operator_only=True))]
AuditWrite = Annotated[Principal, Depends(require("audit:write", operator_only=True))]
ContractsWrite = Annotated[Principal, Depends(require("contracts:write", operator_only=True))]
ContractsRead = Annotated[Principal, Depends(require("contracts:read"))]
# A dry run shows what rubrics make of event content: it needs events:read too.
DryRunRead = Annotated[Principal, Depends(require("contracts:read", "events:read"))]
RewardsRead = Annotated[Principal, Depends(require("rewards:read"))]
# A comparison of two versions is a view of stored rewards (subjects, scores, errors).
CompareRead = Annotated[Principal, Depends(require("contracts:read", "rewards:read"))]
RegistryRead = Annotated[Principal, Depends(require("registry:read"))]
# The gate's cases: every tenant's held-out subjects and the answers generated for them.
GateCasesRead = Annotated[Principal, Depends(require("registry:read", "events:read",
                                                     operator_only=True))]
RegistryWrite = Annotated[Principal, Depends(require("registry:write", operator_only=True))]
TrainWrite = Annotated[Principal, Depends(require("train:write", operator_only=True))]
Admin = Annotated[Principal, Depends(require("admin", operator_only=True))]
# The whole process's series (the log's head, appends, every route's traffic).
MetricsRead = Annotated[Principal, Depends(require("metrics:read", operator_only=True))]
# Lineage queries show the rewards and events adapters were trained on: every tenant's.
LineageRead = Annotated[Principal, Depends(require("lineage:read", operator_only=True))]
