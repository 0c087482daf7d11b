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

import uuid
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from sqlalchemy import func, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from evaluators.tables import reward_records
from events.model import utc
from events.store import EventStore
from trainer import datasets
from trainer.aliases import latest_move
from trainer.model import Conflict, Firing, Invalid, NotFound
from trainer.policies import effective_in
from trainer.policy import ROOT, FireDecision, NothingToTrain, SpecialistState, TriggerPolicy, decide
from trainer.policy import manual as manual_decision
from trainer.registry import adapter_in
from trainer.runs import Runs
from trainer.tables import base_models, specialists, trigger_firings
from trainer.writes import lock_registry, record, specialist_stream, utcnow


class Dispatcher(Protocol):
    def dispatch(self, run_id: str) -> None: ...


@dataclass(frozen=True)
class Evaluation:
    specialist: str
    fired: Firing | None
    note: str  # why it fired, or why not

    def to_json(self) -> dict[str, Any]:
        return {"specialist": self.specialist, "note": self.note,
                "firing": self.fired.to_json() if self.fired else None}


class Triggers:
    def __init__(self, engine: Engine, store: EventStore, runs: Runs, dispatcher: Dispatcher) -> None:
        self.engine, self.store, self.runs, self.dispatcher = engine, store, runs, dispatcher

    def evaluate(self, actor: str = "system:triggers") -> list[Evaluation]:
        """Evaluate every specialist's policy once; fire (and dispatch) what is due."""
        with self.engine.connect() as conn:
            names = list(conn.execute(select(specialists.c.name).order_by(specialists.c.name))
                         .scalars())
        results = [self._evaluate_one(name, actor) for name in names]
        for result in results:
            if result.fired is not None and result.fired.created:
                self.dispatcher.dispatch(result.fired.run_id)
        return results

    def fire_manual(self, specialist: str, actor: str, reason: str = "",
                    parent: str | None = None, base_model: str | None = None) -> Firing:
        """Fire now; ``parent`` is an adapter id, 'root', or None for the production adapter."""
        for _attempt in range(3):
            try:
                with self.engine.begin() as conn:
                    lock_registry(conn)
                    policy = effective_in(conn, specialist).policy
                    state = self._state(conn, specialist, policy, parent)
                    try:
                        decision = manual_decision(policy, state, reason)
                    except NothingToTrain as exc:
                        raise Conflict(str(exc)) from None
                    firing = self._fire_in(conn, state, decision, policy, actor, base_model)
                break
            except IntegrityError:
                continue  # lost a race on the work key to a writer without the lock: re-read
        else:
            raise Conflict(f"could not fire '{specialist}' (contention on the work key)")
        if firing.created:
            self.dispatcher.dispatch(firing.run_id)
        return firing

    def redispatch(self, queued_for: float = 60.0) -> list[str]:
        """Send again the runs no worker holds: queued for long, or running on a dead lease."""
        run_ids = [run.run_id for run in self.runs.needing_dispatch(queued_for)]
        for run_id in run_ids:
            self.dispatcher.dispatch(run_id)
        return run_ids

    def firings(self, specialist: str | None = None, limit: int = 50) -> list[Firing]:
        query = select(trigger_firings)
        if specialist is not None:
            query = query.where(trigger_firings.c.specialist == specialist)
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(trigger_firings.c.event_position.desc()).limit(limit))
            return [_firing(r, created=True) for r in rows]

    def state(self, specialist: str) -> SpecialistState:
        with self.engine.connect() as conn:
            return self._state(conn, specialist, effective_in(conn, specialist).policy, None)

    def _evaluate_one(self, specialist: str, actor: str) -> Evaluation:
        try:
            with self.engine.begin() as conn:
                lock_registry(conn)
                effective = effective_in(conn, specialist)
                state = self._state(conn, specialist, effective.policy, None)
                decision = decide(effective.policy, state)
                if decision is None:
                    return Evaluation(specialist, None, _quiet_note(effective.policy, state))
                firing = self._fire_in(conn, state, decision, effective.policy, actor, None)
        except (Conflict, Invalid, IntegrityError) as exc:
            return Evaluation(specialist, None, f"not fired: {exc}")
        note = decision.reason if firing.created else f"already fired as run {firing.run_id}"
        return Evaluation(specialist, firing, note)

    def _state(self, conn: Connection, specialist: str, policy: TriggerPolicy,
               parent: str | None) -> SpecialistState:
        if parent is None:
            move = latest_move(conn, specialist, policy.gate.alias)
            parent = move.adapter_id if move else None
        elif parent == ROOT:
            parent = None
        parent_cut = 0
        if parent is not None:
            adapter = adapter_in(conn, parent)
            if adapter.specialist != specialist:
                raise Invalid(f"adapter '{parent}' belongs to '{adapter.specialist}'")
            parent_cut = int(datasets.manifest_row(conn, adapter.manifest_id).cut_to)
        eligible = datasets.eligible_condition(specialist, policy.contract)
        head = conn.execute(select(func.coalesce(func.max(reward_records.c.position), 0))
                            .where(eligible)).scalar()
        # Only train-split rewards are new training data; held-out ones just gate.
        new = conn.execute(select(func.count()).select_from(reward_records)
                           .where(eligible, reward_records.c.split == "train",
                                  reward_records.c.position > parent_cut)).scalar()
        mean, count = _served_mean(conn, parent, policy.reward_window)
        last = conn.execute(select(func.max(trigger_firings.c.fired_at)).where(
            trigger_firings.c.specialist == specialist, trigger_firings.c.policy != "manual")).scalar()
        return SpecialistState(
            specialist=specialist, parent_adapter_id=parent, parent_cut=parent_cut,
            eligible_head=int(head or 0), new_eligible=int(new or 0), production_mean=mean,
            production_count=count, last_fired_at=utc(last) if last else None, now=utcnow())

    def _fire_in(self, conn: Connection, state: SpecialistState, decision: FireDecision,
                 policy: TriggerPolicy, actor: str, base_model: str | None) -> Firing:
        key = (trigger_firings.c.specialist == state.specialist) \
            & (trigger_firings.c.parent_key == state.parent_key) \
            & (trigger_firings.c.dataset_cut == decision.dataset_cut)
        existing = conn.execute(select(trigger_firings).where(key)).first()
        if existing is not None:
            return _firing(existing, created=False)
        base, hyper = self._base_and_hyper(conn, state, policy, base_model)
        manifest_id, manifest = datasets.freeze_in(conn, state.specialist, policy.contract,
                                                   decision.cut_from, decision.dataset_cut)
        firing_id, run_id = str(uuid.uuid4()), str(uuid.uuid4())
        event = record(self.store, conn, specialist_stream(state.specialist), "trigger.fired", {
            "firing_id": firing_id, "run_id": run_id, "policy": decision.policy,
            "reason": decision.reason, "parent_adapter_id": state.parent_adapter_id,
            "dataset_cut": decision.dataset_cut, "cut_from": decision.cut_from,
            "manifest_id": manifest_id, "manifest_hash": manifest.content_hash,
        }, actor, specialist=state.specialist, adapter_version=state.parent_adapter_id)
        self.runs.create_in(conn, {
            "run_id": run_id, "specialist": state.specialist,
            "parent_adapter_id": state.parent_adapter_id, "base_model": base,
            "manifest_id": manifest_id, "firing_id": firing_id, "hyper": hyper,
            "gate": policy.gate.model_dump(), "total_steps": int(hyper.get("steps", 0)),
            "created_by": actor,
        }, decision.reason)
        values = {"firing_id": firing_id, "specialist": state.specialist,
                  "parent_key": state.parent_key, "dataset_cut": decision.dataset_cut,
                  "policy": decision.policy, "reason": decision.reason, "run_id": run_id,
                  "fired_by": actor, "fired_at": event.recorded_at,
                  "event_position": event.position}
        conn.execute(trigger_firings.insert().values(**values))
        return _firing(values, created=True)

    def _base_and_hyper(self, conn: Connection, state: SpecialistState, policy: TriggerPolicy,
                        base_model: str | None) -> tuple[str, dict[str, Any]]:
        hyper = resolve_hyper(policy.hyper)
        if state.parent_adapter_id is not None:
            parent = adapter_in(conn, state.parent_adapter_id)
            # A successor keeps its parent's LoRA shape (it starts from the parent's weights).
            for key in ("rank", "alpha", "target_modules"):
                if key in parent.hyper:
                    hyper[key] = parent.hyper[key]
            return parent.base_model, hyper
        names = list(conn.execute(select(base_models.c.name).order_by(base_models.c.name)).scalars())
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


def _served_mean(conn: Connection, adapter_id: str | None, window: int) -> tuple[float | None, int]:
    if adapter_id is None:
        return None, 0
    latest = (select(reward_records.c.score)
              .where(reward_records.c.adapter_version == adapter_id,
                     reward_records.c.score.is_not(None))
              .order_by(reward_records.c.position.desc()).limit(window).subquery())
    mean, count = conn.execute(select(func.avg(latest.c.score), func.count())).one()
    return (float(mean) if mean is not None else None), int(count)


def _quiet_note(policy: TriggerPolicy, state: SpecialistState) -> str:
    if not policy.enabled:
        return "policy disabled"
    return (f"not due: {state.new_eligible} new eligible rewards since "
            f"{state.parent_adapter_id or 'root'} (cut {state.parent_cut})")


def _firing(row: Any, created: bool) -> Firing:
    data = dict(row._mapping) if hasattr(row, "_mapping") else dict(row)
    data.pop("event_position", None)
    data["fired_at"] = utc(data["fired_at"])
    return Firing(**data, created=created)

