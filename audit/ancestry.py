"""``hcp audit adapter SPECIALIST@VERSION``: the version and its whole ancestry.

The ancestry is the union of the parents the rows name and the parents the
``adapter.registered`` events name, so a forged parent cannot hide a link. Then, for
those versions only, one read per kind of row (runs, firings, manifests, rewards,
contracts, base models, the specialist's alias moves) and one per kind of event; the
events relied on are re-hashed and proven in the latest signed checkpoint, the rewards'
subject events are re-hashed and matched with the tree's leaves.
"""

from __future__ import annotations

from typing import Any

from audit.checks import approvals, contracts, log, registry, rewards, training
from audit.checks.approvals import APPROVAL_TYPES
from audit.checks.contracts import CONTRACT_TYPES, SERVING_TYPE
from audit.checks.training import RUN_TYPES
from audit.keys import VerifierKey
from audit.report import AuditReport, Findings
from audit.sources import AuditSources, Progress, Run, rebuild_manifests, rehash_artifacts
from evaluators.chain import SEAL_STREAM, SEAL_TYPE
from events.model import RecordedEvent
from kernel.errors import NotFound

SPECIALIST_TYPES = ("adapter.registered", "adapter.status_changed", "alias.moved", "trigger.fired",
                    *APPROVAL_TYPES)
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


def audit_adapter(src: AuditSources, adapter_id: str, verifier: VerifierKey | None,
                  on_progress: Progress | None) -> AuditReport:
    specialist = adapter_id.rpartition("@")[0]
    adapters = src.registry.adapters(specialist) if specialist else []
    spec_events = src.store.of_types(SPECIALIST_TYPES, [f"specialist:{specialist}"])
    typed = {t: [e for e in spec_events if e.type == t] for t in SPECIALIST_TYPES}
    ids = ancestors(adapter_id, adapters, typed["adapter.registered"])
    if not ids:
        raise AdapterNotFound(f"no adapter version '{adapter_id}' in the registry or the log")
    rows = [r for r in adapters if r["adapter_id"] in ids]
    registered = [e for e in typed["adapter.registered"] if e.payload["adapter_id"] in ids]
    run = Run(f"adapter {adapter_id} ({len(ids)} versions)", on_progress)
    relied: list[RecordedEvent] = list(registered)

    run.check("adapter_versions", "adapter_versions, adapter_contract_versions", "adapter.registered events",
              lambda f: registry.check_adapters(f, rows, src.registry.contract_links(ids), registered))
    status = [e for e in typed["adapter.status_changed"] if e.payload["adapter_id"] in ids]
    run.check("adapter_status_changes", "adapter_status_changes", "adapter.status_changed events",
              lambda f: registry.check_status_changes(f, src.registry.status_changes(ids), status))
    run.check("alias_moves", f"alias_moves of {specialist}", "alias.moved events", lambda f:
              registry.check_alias_moves(f, src.registry.alias_moves(specialist), typed["alias.moved"]))
    steps = [e for e in spec_events if e.type in APPROVAL_TYPES or e.type == "alias.moved"]
    run.check("alias_approvals", f"alias_protections, alias_move_requests, alias_move_decisions of "
              f"{specialist}", "alias.* events; moves of protected aliases against their approvals",
              lambda f: approvals.check_approvals(f, src.registry.alias_protections(specialist),
                                                  src.registry.move_requests(specialist),
                                                  src.registry.move_decisions(specialist), steps))
    relied += status + steps

    run_ids = {r["training_run_id"] for r in rows} | {e.payload["training_run_id"] for e in registered}
    fired = [e for e in typed["trigger.fired"] if e.payload["run_id"] in run_ids]
    run_events = src.store.of_types(RUN_TYPES, [f"training_run:{r}" for r in run_ids])
    run.check("trigger_firings", "trigger_firings", "trigger.fired events",
              lambda f: training.check_firings(f, src.firings.rows(run_ids), fired))
    run.check("training_runs", "training_runs", "training.* events",
              lambda f: training.check_runs(f, src.runs.stored_rows(run_ids), run_events))
    relied += fired + run_events

    manifest_ids = ({r["manifest_id"] for r in rows} | {e.payload["manifest_id"] for e in registered}
                    | {e.payload["manifest_id"] for e in fired})
    manifests = src.manifests.stored_rows(manifest_ids)
    run.check("dataset_manifests", "dataset_manifests", "trigger.fired manifest_hash; rebuilt from rewards "
              "and events", lambda f: _manifests(src, f, manifests, manifest_ids, fired, run))

    names = {r["base_model"] for r in rows} | {e.payload["base_model"] for e in registered}
    base_events = src.store.of_types(["base_model.registered"], [f"base_model:{n}" for n in names])
    run.check("base_models", "base_models", "base_model.registered events",
              lambda f: registry.check_base_models(f, src.registry.base_models(names), base_events))
    relied += base_events

    reward_ids = {rid for m in manifests for rid in m["reward_ids"]}
    used = src.rewards.by_ids(reward_ids)
    contract_names = _contract_names(registered, manifests, used)
    contract_events = src.store.of_types(CONTRACT_TYPES, [f"contract:{n}" for n in contract_names])
    logged = run.check("contract_versions", "contract_versions", "contract.* events", lambda f:
                       contracts.check_contract_versions(f, src.contracts.stored_rows(contract_names),
                                                         contract_events))
    moves = src.store.of_types([SERVING_TYPE], [f"contract:{n}" for n in contract_names])
    run.check("contract_serving_moves", "contract_serving_moves of those contracts",
              "contract.serving_moved events", lambda f:
              contracts.check_serving_moves(f, src.serving.stored_rows(contract_names), moves))
    seals = src.store.of_types([SEAL_TYPE], [SEAL_STREAM])
    run.check("reward_records", "reward_records", "the reward chain around each used reward; "
              "reward.sealed events", lambda f: _rewards(src, f, used, reward_ids, seals, logged))
    relied += contract_events + moves + seals

    run.check("artifacts", "adapter_versions.artifact_sha256", "the artifact store, re-hashed",
              lambda f: _artifacts(src, f, rows, registered, run))
    run.check("event_log", "events, merkle_nodes, audit_checkpoints", "re-hashed; proven in the latest "
              "signed checkpoint", lambda f: _events(src, f, relied, used, verifier))
    return run.finish()


def _manifests(src: AuditSources, f: Findings, rows: list[Row], wanted: set[str],
               fired: list[RecordedEvent], run: Run) -> None:
    for missing in sorted(wanted - {r["manifest_id"] for r in rows}):
        f.add(f"manifest {missing}", "an adapter or a firing names this manifest, but no row has it")
    rebuild_manifests(src, f, rows, fired, run)


def _rewards(src: AuditSources, f: Findings, used: list[Any], wanted: set[str], seals: list[RecordedEvent],
             logged: dict[tuple[str, int], str]) -> None:
    around = {p + d for r in used for d in (-1, 1) if (p := r.position or 0) + d > 0}
    sealed = {int(s.payload["to_position"]) for s in seals}
    at = src.rewards.at_positions(around | sealed)
    rewards.check_used(f, used, at, wanted)
    rewards.check_seals(f, seals, at)
    rewards.check_contract_hashes(f, used, logged)


def _artifacts(src: AuditSources, f: Findings, rows: list[Row], registered: list[RecordedEvent],
               run: Run) -> None:
    # The event's artifact hash, not only the row's: a row pointed at other bytes is
    # already a mismatch, and the bytes the log registered must still be there.
    logged = [{"adapter_id": e.payload["adapter_id"], "artifact_sha256": e.payload["artifact_sha256"]}
              for e in registered]
    rehash_artifacts(src, f, logged or rows, run)


def _events(src: AuditSources, f: Findings, relied: list[RecordedEvent], used: list[Any],
            verifier: VerifierKey | None) -> None:
    unique = sorted({e.position: e for e in relied}.values(), key=lambda e: e.position)
    subjects = sorted(src.store.get_many({eid for r in used for eid in r.event_ids}, raw=True).values(),
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
