"""Trigger policies: when a specialist should get a successor, and why. Pure: no I/O.

A policy is evaluated against a snapshot of the specialist (``SpecialistState``) and
returns at most one ``FireDecision``. The decision names the dataset cut (the last
eligible reward position it covers); together with the specialist and the parent it is
the key that makes a firing exactly-once: evaluating the same state again, in another
process or after a restart, yields the same key, and the registry refuses a second
firing with it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from contract.policy import DISABLED, TriggerPolicy
from contract.schedule import parse_duration, parse_schedule
from contract.sections import ContractDocument
from trainer.gate.policy import GatePolicy

ROOT = "root"  # parent key of a version trained from a fresh LoRA
DEFAULT_REWARD_WINDOW = 50


@dataclass(frozen=True)
class Policy:
    """A trigger policy resolved against where it came from: what ``decide`` and a firing use."""

    rule: TriggerPolicy  # the document as written (contract TOML or API JSON)
    source: str = "none"  # "api" | "contract:<name>@<version>" | "none"
    contract: str | None = None  # only rewards made under this contract count
    base_model: str | None = None  # of root versions
    gate: GatePolicy = field(default_factory=GatePolicy)
    author: str | None = None  # who set it: the API key, or the contract version's publisher

    @property
    def enabled(self) -> bool:
        return self.rule.enabled

    @property
    def hyper(self) -> dict[str, Any]:
        return dict(self.rule.hyper)

    @property
    def reward_window(self) -> int:
        floor = self.rule.reward_floor
        return floor.window if floor else DEFAULT_REWARD_WINDOW

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "author": self.author, "policy": self.rule.model_dump(mode="json"),
                "resolved": {"contract": self.contract, "base_model": self.base_model,
                             "gate": self.gate.model_dump()}}


def resolve(rule: TriggerPolicy, source: str = "api", contract: str | None = None,
            slot_alias: str | None = None, base_model: str | None = None) -> Policy:
    """``rule`` with what its source implies: a contract's own policy uses that contract's
    rewards, gates the alias the harness serves the slot from, and roots use its base."""
    gate = GatePolicy(
        margin=rule.gate_margin, regression_tolerance=dict(rule.regression_tolerance),
        auto_promote=rule.auto_promote, alias=rule.alias or slot_alias or "production",
        metric=rule.gate_metric, rollout_harness=rule.rollout_harness,
        rollout_max_new_tokens=rule.rollout_max_new_tokens, rollout_prompts=rule.rollout_prompts,
        test=rule.gate_test, confidence=rule.gate_confidence, resamples=rule.gate_resamples,
        seed=rule.gate_seed, offline_beside=rule.gate_offline,
        probe_tasks=probe_tasks(rule), probe_margin=rule.gate_probe_margin,
        probe_power=rule.gate_probe_power)
    return Policy(rule, source, contract or rule.contract, rule.base_model or base_model, gate)


DEFAULT_PROBES = 48  # tasks per probe set of a gate on the task harness


def probe_tasks(rule: TriggerPolicy) -> int:
    """The policy's probe set size: as written, else on for the task harness's gates."""
    if rule.gate_probes is not None:
        return rule.gate_probes
    harness_gate = rule.gate_metric == "rollout" and rule.rollout_harness == "tasks"
    return DEFAULT_PROBES if harness_gate else 0


NO_POLICY = Policy(DISABLED)


@dataclass(frozen=True)
class SpecialistState:
    """What the policy looks at; gathered by the registry in one read."""

    specialist: str
    parent_adapter_id: str | None  # what the next run trains from (the production adapter)
    parent_cut: int  # last reward position in the parent's dataset; 0 for a root
    eligible_head: int  # last eligible reward position of this specialist (0: none)
    # New data: subjects with an eligible train-split reward after ``counted_from`` that had
    # none before it (re-scorings of old subjects are not new), under the serving version.
    new_eligible: int
    production_mean: float | None  # mean score of the last reward_window rewards it served
    production_count: int
    last_fired_at: datetime | None  # latest automatic firing of this specialist
    now: datetime
    counted_from: int = 0  # the cut of the last run on this parent (any outcome), else parent_cut
    rejections: int = 0  # consecutive latest runs on this parent whose successor was rejected
    rejected_at: datetime | None = None  # when the latest of them finished
    contract: str | None = None  # whose rewards count and train (triggers.dataset_contract)

    @property
    def parent_key(self) -> str:
        return self.parent_adapter_id or ROOT


@dataclass(frozen=True)
class FireDecision:
    policy: str  # count | drift | schedule | manual | forced
    reason: str
    dataset_cut: int  # last reward position included
    cut_from: int  # rewards after this position are included


def backoff(rule: TriggerPolicy, state: SpecialistState) -> tuple[float, datetime | None]:
    """After rejected runs: how many times the usual new data is needed, and until when
    nothing fires (None: no wait)."""
    if state.rejections < 1:
        return 1.0, None
    factor = min(rule.backoff_factor ** state.rejections, 1e6)
    wait = parse_duration(rule.backoff_wait) if rule.backoff_wait else None
    until = state.rejected_at + wait if wait is not None and state.rejected_at else None
    return factor, until if until is not None and until > state.now else None


def needed(rule: TriggerPolicy, state: SpecialistState, base: int) -> int:
    """New subjects a rule with threshold ``base`` needs, backoff included."""
    return math.ceil(base * backoff(rule, state)[0])


def decide(policy: Policy, state: SpecialistState) -> FireDecision | None:
    """The first rule that fires (count, then drift, then schedule), or None.

    No rule fires without new data since the last run on the parent (whatever became of
    it): the same data on the same parent is the same work, already done. After rejected
    runs each rule needs ``backoff_factor`` times more per rejection, and none fires
    before ``backoff_wait`` has passed.
    """
    rule = policy.rule
    if not rule.enabled or state.new_eligible < needed(rule, state, 1):
        return None
    if backoff(rule, state)[1] is not None:
        return None
    parent = state.parent_adapter_id or "a fresh root"
    threshold = needed(rule, state, rule.min_new_rewards or 1)
    if rule.min_new_rewards is not None and state.new_eligible >= threshold:
        return _fire(rule, state, "count", f"{state.new_eligible} new subjects with eligible "
                     f"rewards since the last run on {parent} (threshold {threshold}"
                     + (f" after {state.rejections} rejected run(s))" if state.rejections else ")"))
    floor = rule.reward_floor
    if (floor is not None and state.production_mean is not None
            and state.production_count >= floor.window
            and state.production_mean < floor.threshold):
        return _fire(rule, state, "drift", f"mean reward of {parent} over its last "
                     f"{state.production_count} rewards is {state.production_mean:.4f}, "
                     f"below {floor.threshold}")
    if rule.schedule is not None and _due(rule.schedule, state):
        return _fire(rule, state, "schedule", f"schedule '{rule.schedule}' is due; "
                     f"{state.new_eligible} new subjects since the last run on {parent}")
    return None


def manual(policy: Policy, state: SpecialistState, reason: str,
           forced: bool = False) -> FireDecision:
    """A firing asked for by a person; it still needs some eligible reward to learn from.
    ``forced``: a new run even on work already done (the same parent and data)."""
    if state.eligible_head < 1:
        raise NothingToTrain(f"specialist '{state.specialist}' has no eligible rewards yet")
    return _fire(policy.rule, state, "forced" if forced else "manual", reason or "manual trigger")


def quiet_note(policy: Policy, state: SpecialistState) -> str:
    """Why nothing fired, in words an operator can act on."""
    rule = policy.rule
    if not rule.enabled:
        return "policy disabled"
    parent = state.parent_adapter_id or "root"
    note = (f"not due: {state.new_eligible} new subjects since the last run on {parent} "
            f"(cut {state.counted_from})")
    if state.rejections:
        factor, until = backoff(rule, state)
        note += (f"; backing off after {state.rejections} rejected run(s): x{factor:g} new data "
                 f"needed" + (f", nothing fires before {until.isoformat()}" if until else ""))
    return note


class NothingToTrain(ValueError):
    pass


def _due(schedule: str, state: SpecialistState) -> bool:
    if state.last_fired_at is None:
        return True
    due = parse_schedule(schedule).next_after(state.last_fired_at)
    return due is not None and due <= state.now


def _fire(policy: TriggerPolicy, state: SpecialistState, name: str, reason: str) -> FireDecision:
    cut_from = state.parent_cut if policy.dataset == "since_parent" else 0
    return FireDecision(policy=name, reason=reason, dataset_cut=state.eligible_head,
                        cut_from=cut_from)


def policy_from_contract(doc: ContractDocument, specialist: str, ref: str) -> Policy | None:
    """The contract's ``[training.triggers.<specialist>]`` resolved (None: absent); ``ref``
    is the version it comes from, ``NAME@VERSION``."""
    rule = doc.training.triggers.get(specialist)
    if rule is None:
        return None
    slot = doc.harness.specialists.get(specialist)
    return resolve(rule, f"contract:{ref}", contract=doc.name,
                   slot_alias=slot.adapter_alias if slot else None, base_model=doc.harness.base_model)
