"""Dependencies shared by the routes: the services of the container, and principals whose
scopes were checked. Routes take what they use by type; nothing here builds a service."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from access.keys import Principal
from api.metrics import Metrics
from audit.asof import AsOf
from audit.downstream import Downstream
from audit.lineage import Lineage
from audit.upstream import Upstream
from contract.serving import ContractServing
from contract.versions import ContractVersions
from evaluators.comparison import Comparisons
from evaluators.dryrun import DryRuns
from evaluators.publishing import Publisher
from evaluators.reevaluation import Reevaluations
from evaluators.rewards import RewardStore
from events.ingest import ReferenceCheck
from events.store import EventStore
from hcp.bootstrap import Container
from hcp.settings import Settings
from trainer.registry.aliases import Aliases
from trainer.registry.approvals import Approvals
from trainer.registry.artifacts import ArtifactStore
from trainer.registry.registry import Registry
from trainer.registry.serving import Resolver
from trainer.runs.store import Runs
from trainer.triggers.firing import Triggers
from trainer.triggers.sources import Policies

bearer = HTTPBearer(auto_error=False, description="An API key from `hcp keys create`")


def get_container(request: Request) -> Container:
    container: Container = request.app.state.container
    return container


ContainerDep = Annotated[Container, Depends(get_container)]


def _service(name: str) -> Any:
    def get(container: ContainerDep) -> Any:
        return getattr(container, name)

    return Depends(get)


def _metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


SettingsDep = Annotated[Settings, _service("settings")]
MetricsDep = Annotated[Metrics, Depends(_metrics)]
StoreDep = Annotated[EventStore, _service("store")]
ReferencesDep = Annotated[ReferenceCheck, _service("references")]
ContractsDep = Annotated[ContractVersions, _service("contracts")]
ServingDep = Annotated[ContractServing, _service("serving")]
RewardsDep = Annotated[RewardStore, _service("rewards")]
DryRunsDep = Annotated[DryRuns, _service("dry_runs")]
PublisherDep = Annotated[Publisher, _service("publisher")]
ComparisonsDep = Annotated[Comparisons, _service("comparisons")]
ReevaluationsDep = Annotated[Reevaluations, _service("reevaluations")]
RegistryDep = Annotated[Registry, _service("registry")]
AliasesDep = Annotated[Aliases, _service("aliases")]
ApprovalsDep = Annotated[Approvals, _service("approvals")]
ResolverDep = Annotated[Resolver, _service("resolver")]
ArtifactsDep = Annotated[ArtifactStore, _service("artifacts")]
LineageDep = Annotated[Lineage, _service("lineage")]
UpstreamDep = Annotated[Upstream, _service("upstream")]
DownstreamDep = Annotated[Downstream, _service("downstream")]
AsOfDep = Annotated[AsOf, _service("as_of")]
RunsDep = Annotated[Runs, _service("runs")]
PoliciesDep = Annotated[Policies, _service("policies")]
TriggersDep = Annotated[Triggers, _service("triggers")]


def require(scope: str) -> Callable[..., Any]:
    """A dependency that admits only keys holding ``scope`` (or ``admin``)."""

    def check(
        container: ContainerDep,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> Principal:
        if credentials is None:
            raise HTTPException(401, "missing API key: send Authorization: Bearer <key>",
                                headers={"WWW-Authenticate": "Bearer"})
        principal = container.keys.authenticate(credentials.credentials)
        if principal is None:
            raise HTTPException(401, "unknown or malformed API key",
                                headers={"WWW-Authenticate": "Bearer"})
        if not principal.allows(scope):
            raise HTTPException(403, f"this key lacks the scope '{scope}'")
        return principal

    return check


# One alias per scope, so a route's signature says what it needs.
EventsWrite = Annotated[Principal, Depends(require("events:write"))]
EventsRead = Annotated[Principal, Depends(require("events:read"))]
AuditRead = Annotated[Principal, Depends(require("audit:read"))]
ContractsWrite = Annotated[Principal, Depends(require("contracts:write"))]
ContractsRead = Annotated[Principal, Depends(require("contracts:read"))]
RewardsRead = Annotated[Principal, Depends(require("rewards:read"))]
RegistryRead = Annotated[Principal, Depends(require("registry:read"))]
RegistryWrite = Annotated[Principal, Depends(require("registry:write"))]
TrainWrite = Annotated[Principal, Depends(require("train:write"))]
Admin = Annotated[Principal, Depends(require("admin"))]
LineageRead = Annotated[Principal, Depends(require("lineage:read"))]
