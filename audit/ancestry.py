"""``hcp audit adapter SPECIALIST@VERSION``: the version and its whole ancestry.

The ancestry is the union of the parents the rows name and the parents the
``adapter.registered`` events name, so a forged parent cannot hide a link. What those
versions rely on (``Scope``: runs, firings, manifests, rewards, contracts, base models,
the specialist's aliases) is gathered from both too; then every projected table is
replayed and only the rows of the scope are judged, the log's agreement with itself is
checked for them, and the events relied on are re-hashed and proven in the latest signed
checkpoint (the rewards' subject events matched with the tree's leaves).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from audit.checks import approvals, contracts, log, registry, rewards, training
from audit.checks.approvals import APPROVAL_TYPES
from audit.checks.contracts import CONTRACT_TYPES, SERVING_TYPE
from audit.keys import VerifierKey
from audit.manifests import rebuild_manifests
from audit.report import AuditReport, Findings
from audit.sources import AuditSources, Progress, Run, check_projections, rehash_artifacts
from contract.versions import contract_stream
from evaluators.chain import SEAL_STREAM, SEAL_TYPE
from events.model import RecordedEvent
from events.projections.compare import Where
from kernel.errors import NotFound
from trainer.journal import base_model_stream, run_stream, specialist_stream
from trainer.registry.events import AdapterRegistered, AdapterStatusChanged, BaseModelRegistered
from trainer.runs.events import (
    TrainingFailed,
    TrainingQueued,
    TrainingRequeued,
    TrainingStarted,
    TrainingSucceeded,
)

REGISTERED, STATUS = AdapterRegistered.TYPE, AdapterStatusChanged.TYPE
SPECIALIST_TYPES = (REGISTERED, STATUS, registry.MOVED, training.FIRED, training.FROZEN, *APPROVAL_TYPES)
RUN_TYPES = tuple(c.TYPE for c in (TrainingQueued, TrainingStarted, TrainingSucceeded, TrainingFailed,
                                   TrainingRequeued))
Row = dict[str, Any]


class AdapterNotFound(NotFound):
    pass


def ancestors(adapter_id: str, rows: list[Row], registered: list[RecordedEvent]) -> set[str]:
    """The version and every parent either the rows or the events give, transitively."""
    parents: dict[str, set[str]] = {}
    for row in rows:
        parents.setdefault(row["adapter_id"], set()).add(row["parent_adapter_id"])
    for event in registered:
        parents.setdefault(event.payload["adapter_id"], set()).add(event.payload["parent_adapter_id"])
    found, todo = set(), [adapter_id]
    while todo:
        current = todo.pop()
        if current is None or current in found or current not in parents:
            continue
        found.add(current)
        todo.extend(parents[current])
    return found


@dataclass
class Scope:
    """What one adapter's ancestry relies on, from its rows and its events alike."""

    specialist: str
    adapters: set[str]
    rows: list[Row]  # the adapter rows of the ancestry
    events: list[RecordedEvent]  # the specialist's events the ancestry relies on
    runs: set[str] = field(default_factory=set)
    manifests: set[str] = field(default_factory=set)
    manifest_rows: list[Row] = field(default_factory=list)
    base_models: set[str] = field(default_factory=set)
    contracts: set[str] = field(default_factory=set)
    used: list[Any] = field(default_factory=list)  # the reward records of its manifests
    relied: list[RecordedEvent] = field(default_factory=list)  # every event to re-hash and prove

    def of(self, *types: str) -> list[RecordedEvent]:
        return [e for e in self.events if e.type in types]

    def rows_in_scope(self) -> dict[str, Callable[[Row], bool]]:
        """By projected table, which of its rows the ancestry relies on."""
        def where(column: str, values: set[str]) -> Where:
            return Where(column, frozenset(values))  # a grouped table reads only these groups

        specialist = {self.specialist}
        requests = {e.payload["request_id"] for e in self.events if "request_id" in e.payload}
        return {
            "specialists": where("name", specialist), "base_models": where("name", self.base_models),
            "contract_versions": where("name", self.contracts),
            "contract_serving_moves": where("name", self.contracts),
            "dataset_manifests": where("manifest_id", self.manifests),
            "manifest_members": where("manifest_id", self.manifests),
            "manifest_contract_versions": where("manifest_id", self.manifests),
            "training_runs": where("run_id", self.runs), "trigger_firings": where("run_id", self.runs),
            "adapter_versions": where("adapter_id", self.adapters),
            "adapter_contract_versions": where("adapter_id", self.adapters),
            "adapter_ancestry": where("descendant_id", self.adapters),
            "adapter_status_changes": where("adapter_id", self.adapters),
            "alias_moves": where("specialist", specialist),
            "alias_protections": where("specialist", specialist),
            "alias_move_requests": where("specialist", specialist),
            "alias_move_decisions": where("request_id", requests)}


def gather(src: AuditSources, adapter_id: str) -> Scope:
    specialist = adapter_id.rpartition("@")[0]
    adapters = src.registry.adapters(specialist) if specialist else []
    spec_events = src.store.of_types(SPECIALIST_TYPES, [specialist_stream(specialist)])
    registered = [e for e in spec_events if e.type == REGISTERED]
    ids = ancestors(adapter_id, adapters, registered)
    if not ids:
        raise AdapterNotFound(f"no adapter version '{adapter_id}' in the registry or the log")
    rows = [r for r in adapters if r["adapter_id"] in ids]
    registered = [e for e in registered if e.payload["adapter_id"] in ids]
    runs = {r["training_run_id"] for r in rows} | {e.payload["training_run_id"] for e in registered}
    fired = [e for e in spec_events if e.type == training.FIRED and e.payload["run_id"] in runs]
    manifests = ({r["manifest_id"] for r in rows} | {e.payload["manifest_id"] for e in registered}
                 | {e.payload["manifest_id"] for e in fired})
    scope = Scope(specialist, ids, rows, [e for e in spec_events if _relied(e, ids, runs, manifests)],
                  runs=runs, manifests=manifests)
    scope.manifest_rows = src.manifests.stored_rows(manifests)
    scope.base_models = {r["base_model"] for r in rows} | {e.payload["base_model"] for e in registered}
    scope.used = src.rewards.by_ids({rid for m in scope.manifest_rows for rid in m["reward_ids"]})
    scope.contracts = _contract_names(registered, scope.manifest_rows, scope.used)
    return scope


def _relied(event: RecordedEvent, adapters: set[str], runs: set[str], manifests: set[str]) -> bool:
    """Whether the ancestry relies on one of its specialist's events (every alias step does)."""
    p = event.payload
    if event.type in (REGISTERED, STATUS):
        return p["adapter_id"] in adapters
    if event.type == training.FIRED:
        return p["run_id"] in runs
    if event.type == training.FROZEN:
        return p["manifest_id"] in manifests
    return True


def audit_adapter(src: AuditSources, adapter_id: str, verifier: VerifierKey | None,
                  on_progress: Progress | None) -> AuditReport:
    scope = gather(src, adapter_id)
    run = Run(f"adapter {adapter_id} ({len(scope.adapters)} versions)", on_progress)
    check_projections(src, run, scope.rows_in_scope())
    of, names = src.store.of_types, sorted(scope.contracts)
    contract_events = of(CONTRACT_TYPES, [contract_stream(n) for n in names])
    moves = of([SERVING_TYPE], [contract_stream(n) for n in names])
    run.check("contract_documents", "contract_versions of those contracts", "each stored document re-hashed",
              lambda f: contracts.check_documents(f, src.contracts.stored_rows(names)))
    run.check("serving_chain", "contract.serving_moved events of those contracts", "the move before each",
              lambda f: contracts.check_serving_chain(f, moves))
    steps = scope.of(*APPROVAL_TYPES, registry.MOVED)
    run.check("alias_chain", f"alias.moved events of {scope.specialist}", "the move before each",
              lambda f: registry.check_alias_chain(f, steps))
    run.check("alias_approvals", f"alias.* events of {scope.specialist}",
              "moves of protected aliases against their approvals",
              lambda f: approvals.check_approvals(f, steps))
    run.check("manifest_examples", "dataset_manifests of the ancestry", "trigger.fired and dataset.frozen "
              "hashes; examples rebuilt from rewards and events", lambda f: rebuild_manifests(
                  src, f, scope.manifest_rows, scope.of(training.FROZEN), scope.of(training.FIRED), run))
    seals = of([SEAL_TYPE], [SEAL_STREAM])
    logged = contracts.logged_hashes(contract_events)
    run.check("reward_records", "reward_records", "the reward chain around each used reward; "
              "reward.sealed events", lambda f: _rewards(src, f, scope, seals, logged))
    run.check("artifacts", "adapter_versions.artifact_sha256", "the artifact store, re-hashed",
              lambda f: _artifacts(src, f, scope, run))
    bases = [base_model_stream(n) for n in sorted(scope.base_models)]
    scope.relied = [*scope.events, *contract_events, *moves, *seals, *of([BaseModelRegistered.TYPE], bases),
                    *of(RUN_TYPES, [run_stream(r) for r in sorted(scope.runs)])]
    run.check("event_log", "events, merkle_nodes, audit_checkpoints", "re-hashed; proven in the latest "
              "signed checkpoint", lambda f: _events(src, f, scope, verifier))
    return run.finish()


def _rewards(src: AuditSources, f: Findings, scope: Scope, seals: list[RecordedEvent],
             logged: dict[tuple[str, int], str]) -> None:
    used = scope.used
    around = {p + d for r in used for d in (-1, 1) if (p := r.position or 0) + d > 0}
    sealed = {int(s.payload["to_position"]) for s in seals}
    at = src.rewards.at_positions(around | sealed)
    rewards.check_used(f, used, at, {rid for m in scope.manifest_rows for rid in m["reward_ids"]})
    rewards.check_seals(f, seals, at)
    rewards.check_contract_hashes(f, used, logged)


def _artifacts(src: AuditSources, f: Findings, scope: Scope, run: Run) -> None:
    # The event's artifact hash, not only the row's: a row pointed at other bytes is
    # already a mismatch, and the bytes the log registered must still be there.
    logged = [{"adapter_id": e.payload["adapter_id"], "artifact_sha256": e.payload["artifact_sha256"]}
              for e in scope.of(REGISTERED) if e.payload["adapter_id"] in scope.adapters]
    rehash_artifacts(src, f, logged or scope.rows, run)


def _events(src: AuditSources, f: Findings, scope: Scope, verifier: VerifierKey | None) -> None:
    unique = sorted({e.position: e for e in scope.relied}.values(), key=lambda e: e.position)
    subjects = sorted(src.store.get_many({eid for r in scope.used for eid in r.event_ids}, raw=True).values(),
                      key=lambda e: e.position)
    log.check_events(f, unique + subjects)
    latest = src.checkpoints.latest()
    if latest is None:
        f.note("no checkpoint has been signed: the events were re-hashed but not proven")
        return
    log.check_checkpoints(f, [latest], verifier, src.store.head())
    nodes = src.nodes()
    log.check_inclusion(f, unique, latest, nodes)
    log.check_leaves(f, subjects, nodes, latest.checkpoint.size)


def _contract_names(registered: list[RecordedEvent], manifests: list[Row], used: list[Any]) -> set[str]:
    names = {c["name"] for e in registered for c in e.payload.get("contract_versions", [])}
    names |= {c["name"] for m in manifests for c in m["contract_versions"]}
    return names | {r.contract_name for r in used}
