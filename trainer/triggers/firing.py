"""Trigger evaluation and firing: exactly one run per (specialist, parent, dataset cut).

A firing is one transaction under the registry lock: read the specialist's state, decide,
check the work key, freeze the dataset manifest, write the ``trigger.fired`` event, the
queued run and the firing row. The UNIQUE key on ``trigger_firings`` backs the check, so
two trigger processes, a restart or a re-evaluation of an unchanged state find the work
already fired and start nothing. The task is sent after commit; a send lost to a crash
is made good by ``redispatch`` (a queued run is its own outbox entry), and a duplicate
send is harmless because the task id is the run id and the worker claims the run.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from contract.serving import ContractServing
from evaluators.rewards import RewardStore
from events.projections.sql import project_in
from events.store import EventStore
from kernel.clock import utc, utcnow
from kernel.errors import Conflict, Invalid, NotFound
from trainer.datasets.manifests import Manifests
from trainer.journal import append, lock_registry, specialist_stream
from trainer.registry.aliases import latest_move
from trainer.registry.in_transaction import adapter_in, base_model_names_in, specialist_names_in
from trainer.runs.dispatch import Dispatcher, DispatchFailed
from trainer.runs.model import SUCCEEDED, TrainingRun
from trainer.runs.store import Runs
from trainer.triggers.dataset_contract import ContractChoice, dataset_contract
from trainer.triggers.events import TriggerFired
from trainer.triggers.model import Firing
from trainer.triggers.policy import (
    ROOT,
    FireDecision,
    NothingToTrain,
    Policy,
    SpecialistState,
    decide,
    quiet_note,
)
from trainer.triggers.policy import manual as manual_decision
from trainer.triggers.projections import TRIGGER_PROJECTIONS
from trainer.triggers.sources import Policies
from trainer.triggers.tables import trigger_firings

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class TriggerCheck:
    """One specialist's policy evaluated once: the firing, or why there was none."""

    specialist: str
    fired: Firing | None
    note: str  # why it fired, or why not

    def to_json(self) -> dict[str, Any]:
        return {"specialist": self.specialist, "note": self.note,
                "firing": self.fired.to_json() if self.fired else None}


class Triggers:
    def __init__(self, engine: Engine, store: EventStore, policies: Policies, rewards: RewardStore,
                 manifests: Manifests, runs: Runs, dispatcher: Dispatcher,
                 serving: ContractServing | None = None, serving_contract: str | None = None) -> None:
        self.engine, self.store, self.policies, self.rewards = engine, store, policies, rewards
        self.manifests, self.runs, self.dispatcher = manifests, runs, dispatcher
        self.serving = serving  # which contract version a specialist's new data is counted under
        self.serving_contract = serving_contract  # HCP_SERVING_CONTRACT (dataset_contract)

    def evaluate(self, actor: str = "system:triggers") -> list[TriggerCheck]:
        """Evaluate every specialist's policy once; fire (and dispatch) what is due."""
        with self.engine.connect() as conn:
            names = specialist_names_in(conn)
        results = [self._evaluate_one(name, actor) for name in names]
        sent = []
        for result in results:
            if result.fired is not None and result.fired.created and not self.send(result.fired.run_id):
                result = replace(result, fired=replace(result.fired, dispatched=False))
            sent.append(result)
        return sent

    def fire_manual(self, specialist: str, actor: str, reason: str = "",
                    parent: str | None = None, base_model: str | None = None,
                    force: bool = False, hyper: dict[str, Any] | None = None) -> Firing:
        """Fire now; ``parent`` is an adapter id, 'root', or None for the production adapter.

        Work already fired (same parent, same data) returns its run, unless ``force``: then
        a new run of the same work, with the policy's current hyper-parameters and gate
        (and ``hyper`` over them), its own firing, run and lineage; ``reason`` is required.
        """
        if force and not reason.strip():
            raise Invalid("a forced re-run needs a reason (it is recorded in the trigger.fired event)")
        for _attempt in range(3):
            try:
                with self.engine.begin() as conn:
                    lock_registry(conn)
                    policy = self.policies.effective_in(conn, specialist)
                    state = self._state(conn, specialist, policy, parent)
                    try:
                        decision = manual_decision(policy, state, reason, force)
                    except NothingToTrain as exc:
                        raise Conflict(str(exc)) from None
                    firing = self._fire_in(conn, state, decision, policy, actor, base_model,
                                           force, hyper or {})
                break
            except IntegrityError:
                continue  # lost a race on the work key to a writer without the lock: re-read
        else:
            raise Conflict(f"could not fire '{specialist}' (contention on the work key)")
        if firing.created and not self.send(firing.run_id):
            firing = replace(firing, dispatched=False)
        return firing

    def send(self, run_id: str) -> bool:
        """Hand a queued run to a worker; False (logged) when the broker is unreachable:
        the run stays queued and ``redispatch`` sends it once the broker is back."""
        try:
            self.dispatcher.dispatch(run_id)
        except DispatchFailed as exc:
            log.warning("run %s is queued but not sent: %s", run_id, exc)
            return False
        return True

    def redispatch(self, queued_for: float = 60.0) -> list[str]:
        """Send again the runs no worker holds: queued for long, or running on a dead lease.
        Stops at the first send the broker refuses (the rest would fail alike)."""
        sent: list[str] = []
        for run in self.runs.needing_dispatch(queued_for):
            if not self.send(run.run_id):
                break
            sent.append(run.run_id)
        return sent

    def firings(self, specialist: str | None = None, limit: int = 50) -> list[Firing]:
        query = select(trigger_firings)
        if specialist is not None:
            query = query.where(trigger_firings.c.specialist == specialist)
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(trigger_firings.c.event_position.desc()).limit(limit))
            return [firing_from_row(r, created=True) for r in rows]

    def state(self, specialist: str) -> SpecialistState:
        with self.engine.connect() as conn:
            return self._state(conn, specialist, self.policies.effective_in(conn, specialist), None)

    def _evaluate_one(self, specialist: str, actor: str) -> TriggerCheck:
        try:
            with self.engine.begin() as conn:
                lock_registry(conn)
                policy = self.policies.effective_in(conn, specialist)
                state = self._state(conn, specialist, policy, None)
                decision = decide(policy, state)
                if decision is None:
                    return TriggerCheck(specialist, None, quiet_note(policy, state))
                firing = self._fire_in(conn, state, decision, policy, actor, None)
        except (Conflict, Invalid, IntegrityError) as exc:
            return TriggerCheck(specialist, None, f"not fired: {exc}")
        note = decision.reason if firing.created else f"already fired as run {firing.run_id}"
        return TriggerCheck(specialist, firing, note)

    def _state(self, conn: Connection, specialist: str, policy: Policy,
               parent: str | None) -> SpecialistState:
        if parent is None:
            move = latest_move(conn, specialist, policy.gate.alias)
            parent = move.adapter_id if move else None
        elif parent == ROOT:
            parent = None
        parent_cut, parent_contracts = 0, []
        if parent is not None:
            adapter = adapter_in(conn, parent)
            if adapter.specialist != specialist:
                raise Invalid(f"adapter '{parent}' belongs to '{adapter.specialist}'")
            row = self.manifests.row(adapter.manifest_id, conn)
            parent_cut = int(row.cut_to)
            parent_contracts = [c["name"] for c in row.contract_versions]
        contract = self._dataset_contract(conn, specialist, policy, parent_contracts)
        head = self.rewards.eligible_head(specialist, contract, conn)
        # New data is counted from the last run on this parent, whatever became of it, so a
        # rejected or failed successor does not make the same data count again.
        last_cut = conn.execute(select(func.max(trigger_firings.c.dataset_cut)).where(
            trigger_firings.c.specialist == specialist,
            trigger_firings.c.parent_key == (parent or ROOT))).scalar()
        counted_from = max(parent_cut, int(last_cut or 0))
        version = self._serving_version(conn, contract, specialist)
        # Subjects, not rewards (several active versions score each one), train split only
        # (held-out rewards just gate), under the serving contract version when known.
        new = self.rewards.count_new_subjects(specialist, contract, version, counted_from,
                                              "train", conn)
        mean, count = (self.rewards.served_mean(parent, policy.reward_window, conn,
                                                contract, version) if parent else (None, 0))
        last = conn.execute(select(func.max(trigger_firings.c.fired_at)).where(
            trigger_firings.c.specialist == specialist,
            trigger_firings.c.policy.not_in(("manual", "forced")))).scalar()
        rejections, rejected_at = _rejections(self.runs.on_parent_in(conn, specialist, parent))
        return SpecialistState(
            specialist=specialist, parent_adapter_id=parent, parent_cut=parent_cut,
            eligible_head=head, new_eligible=new, production_mean=mean,
            production_count=count, last_fired_at=utc(last) if last else None, now=utcnow(),
            counted_from=counted_from, rejections=rejections, rejected_at=rejected_at,
            contract=contract)

    def _dataset_contract(self, conn: Connection, specialist: str, policy: Policy,
                          parent_contracts: list[str]) -> str | None:
        serving = [v.name for v in self.policies.contracts.latest_published_each(conn)
                   if self._serving_version(conn, v.name, specialist) is not None]
        return dataset_contract(ContractChoice(
            specialist, policy.contract, parent_contracts, self.serving_contract, serving,
            self.rewards.contract_names(specialist, conn)))

    def _serving_version(self, conn: Connection, contract: str | None,
                         specialist: str) -> int | None:
        if contract is None or self.serving is None:
            return None
        return self.serving.version_for(contract, specialist, conn)

    def _fire_in(self, conn: Connection, state: SpecialistState, decision: FireDecision,
                 policy: Policy, actor: str, base_model: str | None, force: bool = False,
                 hyper_overrides: dict[str, Any] | None = None) -> Firing:
        key = (trigger_firings.c.specialist == state.specialist) \
            & (trigger_firings.c.parent_key == state.parent_key) \
            & (trigger_firings.c.dataset_cut == decision.dataset_cut)
        existing = conn.execute(select(trigger_firings).where(key)
                                .order_by(trigger_firings.c.rerun.desc()).limit(1)).first()
        if existing is not None and not force:
            return firing_from_row(existing, created=False)
        rerun = existing.rerun + 1 if existing is not None else 0
        base, hyper = self._base_and_hyper(conn, state, policy, base_model, hyper_overrides or {})
        manifest_id, manifest = self.manifests.freeze_in(conn, state.specialist, state.contract,
                                                         decision.cut_from, decision.dataset_cut, actor,
                                                         parent=state.parent_adapter_id)
        firing_id, run_id = str(uuid.uuid4()), str(uuid.uuid4())
        fired = append(self.store, conn, TRIGGER_PROJECTIONS, specialist_stream(state.specialist),
                       TriggerFired(firing_id=firing_id, run_id=run_id, policy=decision.policy,
                                    reason=decision.reason, parent_adapter_id=state.parent_adapter_id,
                                    dataset_cut=decision.dataset_cut, cut_from=decision.cut_from,
                                    manifest_id=manifest_id, manifest_hash=manifest.content_hash,
                                    rerun=rerun),
                       actor, specialist=state.specialist, adapter_version=state.parent_adapter_id)
        self.runs.create_in(conn, {
            "run_id": run_id, "specialist": state.specialist,
            "parent_adapter_id": state.parent_adapter_id, "base_model": base,
            "manifest_id": manifest_id, "firing_id": firing_id, "hyper": hyper,
            "gate": policy.gate.model_dump(), "total_steps": planned_steps(hyper),
            "created_by": actor, "policy_source": policy.source, "policy_author": policy.author,
        }, decision.reason)
        project_in(conn, TRIGGER_PROJECTIONS, fired)  # after the run: the firing row names it
        return firing_from_row(conn.execute(select(trigger_firings).where(
            trigger_firings.c.firing_id == firing_id)).one(), created=True)

    def _base_and_hyper(self, conn: Connection, state: SpecialistState, policy: Policy,
                        base_model: str | None,
                        overrides: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        hyper = resolve_hyper({**policy.hyper, **overrides})
        if state.parent_adapter_id is not None:
            parent = adapter_in(conn, state.parent_adapter_id)
            # A successor keeps its parent's LoRA shape (it starts from the parent's weights).
            for key in ("rank", "alpha", "target_modules"):
                if key in parent.hyper:
                    hyper[key] = parent.hyper[key]
            return parent.base_model, hyper
        names = base_model_names_in(conn)
        # A contract names its base as the harness knows it, which need not be a registry
        # name; with one registered base there is no doubt which is meant.
        preferred = policy.base_model if policy.base_model in names else None
        chosen = base_model or preferred or (names[0] if len(names) == 1 else None)
        if chosen is None:
            raise Invalid("no base model for a root version: register one, or name it in the "
                          f"policy ({len(names)} registered)")
        if chosen not in names:
            raise NotFound(f"no base model '{chosen}'")
        return chosen, hyper


def resolve_hyper(overrides: dict[str, Any]) -> dict[str, Any]:
    """The full hyper-parameters (defaults + overrides), validated where torch is present."""
    try:
        from trainer.ml.lora import HyperParams
    except ImportError:  # a registry-only install: the worker validates
        return dict(overrides)
    fields: dict[str, Any] = {k: tuple(v) if k == "target_modules" else v for k, v in overrides.items()}
    try:
        params = HyperParams(**fields)
    except (TypeError, ValueError) as exc:
        raise Invalid(f"hyper-parameters: {exc}") from None
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(params).items()}


def planned_steps(hyper: dict[str, Any]) -> int:
    """The run's step count as far as the firing knows it: ``steps``, or 0 when ``epochs``
    makes it depend on how many examples the worker selects (it records the count then)."""
    return 0 if float(hyper.get("epochs") or 0) > 0 else int(hyper.get("steps", 0))


def _rejections(runs: list[TrainingRun]) -> tuple[int, datetime | None]:
    """Consecutive latest runs whose successor the gate rejected, and when the latest
    finished; failed and unfinished runs neither count nor break the streak."""
    count, latest = 0, None
    for run in runs:  # newest first
        if run.status != SUCCEEDED:
            continue
        if run.gate_outcome != "rejected":
            break
        count += 1
        latest = latest or run.finished_at
    return count, latest


def firing_from_row(row: Any, created: bool) -> Firing:
    data = dict(row._mapping) if hasattr(row, "_mapping") else dict(row)
    data.pop("event_position", None)
    data["fired_at"] = utc(data["fired_at"])
    return Firing(**data, created=created)

