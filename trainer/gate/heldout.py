"""The gate of a training run: its successor against its parent on the held-out split.

The parent is the parent adapter, or the bare base model for a root version. The policy's
``metric`` says what is compared:

- ``offline`` (the default): ``ml.metrics.heldout_metric`` of both models on the held-out
  rewarded examples (the reward-weighted log-likelihood margin, and one margin per
  criterion), judged by ``decision.judge``.
- ``rollout``: both models answer the prompts of the latest ``rollout_prompts`` held-out
  subjects (greedy, with the gate's harness named ``rollout_harness``), the contract version that
  scored each subject judges it again with the answer in its place (``gate.rollout``),
  and ``decision.judge_rollouts`` compares them by the policy's ``test`` (mean, paired
  bootstrap interval or sign test) and checks the criteria's means. The parent's answers
  are reused from its own gate record when they answer exactly the same cases
  (``reusable``). Unless the policy turns it off (``offline_beside``), the offline metric
  is measured too and recorded beside it, not gated.

The returned record goes into ``metrics.gate`` whether the successor passes or not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from contract.document import ContractInvalid
from contract.evaluate import CompiledContract, compile_contract
from contract.versions import ContractVersions, VersionNotFound
from kernel.errors import Invalid
from trainer.datasets.manifest import ManifestExample
from trainer.datasets.manifests import Manifests
from trainer.gate import probes, rollout
from trainer.gate.decision import judge, judge_rollouts
from trainer.gate.policy import GatePolicy
from trainer.ml.metrics import GateMetrics


@dataclass(frozen=True)
class GateInputs:
    base_dir: str | Path
    successor_dir: Path
    parent_dir: Path | None  # None: the bare base model
    held_out: list[ManifestExample]
    max_len: int
    device: str | None
    cases: list[rollout.RolloutCase]  # from ``Gate.prepare``; empty for the offline metric
    precision: str = "auto"  # of the base's weights, as it trained (and as the harness serves)
    parent_gate: dict[str, Any] | None = None  # the parent's own gate record, if any
    parent_ref: str | None = None  # which version the parent is (e.g. coding@2)
    specialist: str = ""  # whose probe sets (the unseen templates) the gate answers


class Gate:
    """Successor against parent, under a run's gate policy.

    ``harnesses`` are the rollout harnesses a policy may name (``rollout.BUILT_IN`` and those
    the composition root adds: some live above the trainer)."""

    def __init__(self, manifests: Manifests, contracts: ContractVersions,
                 harnesses: Mapping[str, rollout.HarnessFactory]) -> None:
        self.manifests, self.contracts = manifests, contracts
        self.harnesses = harnesses

    def harness(self, name: str) -> rollout.HarnessFactory:
        """Raises:
            Invalid: this gate was given no harness named ``name``.
        """
        return rollout.pick_harness(self.harnesses, name)

    def prepare(self, held_out: Sequence[ManifestExample],
                policy: GatePolicy) -> list[rollout.RolloutCase]:
        """What the rollout gate will judge, loaded before training so that a missing
        harness, subject or contract fails the run before its training time is spent."""
        if policy.metric != "rollout" or not held_out:
            return []
        self.harness(policy.rollout_harness)
        return self.rollout_cases(rollout.latest(held_out, policy.rollout_prompts))

    def judge(self, inputs: GateInputs, policy: GatePolicy) -> dict[str, Any]:
        """{"promote", "reason", "comparison", "metric", ...}: the decision and what it saw."""
        from trainer.ml.metrics import heldout_metric

        held_out = inputs.held_out
        if not held_out:
            return {"promote": False, "reason": "no held-out examples to compare on",
                    "comparison": {}, "metric": policy.metric}
        record = {"metric": policy.metric, "parent_is_base": inputs.parent_dir is None,
                  "held_out": len(held_out)}
        harness = self.harness(policy.rollout_harness) if policy.metric == "rollout" else None
        if harness is not None and not policy.offline_beside:
            return with_probes({**_rollout_gate(inputs, policy, harness, None, None), **record},
                               inputs, policy)
        examples = [ex.training_example() for ex in held_out]
        names = set.intersection(*(set(ex.components) for ex in held_out))
        criteria = {n: [ex.components[n] for ex in held_out] for n in sorted(names)}
        successor, parent = (heldout_metric(inputs.base_dir, adapter, examples, criteria=criteria,
                                            max_len=inputs.max_len, device=inputs.device)
                             for adapter in (inputs.successor_dir, inputs.parent_dir))
        if harness is None:
            return with_probes({**judge(successor, parent, policy), **record,
                                "successor": successor.to_dict(), "parent": parent.to_dict()},
                               inputs, policy)
        return with_probes({**_rollout_gate(inputs, policy, harness, successor, parent), **record},
                           inputs, policy)

    def rollout_cases(self, examples: Sequence[ManifestExample]) -> list[rollout.RolloutCase]:
        """The examples' prompts with their stored subjects and the contracts that scored them.

        Raises:
            Invalid: a subject or a contract version is missing, or the version's hash is
                not the one the reward was made with.
        """
        subjects = self.manifests.judged_subjects([ex.reward_id for ex in examples])
        compiled: dict[tuple[str, int, str], CompiledContract] = {}
        cases = []
        for ex in examples:
            judged = subjects.get(ex.reward_id)
            if judged is None or not judged.subject.events:
                raise Invalid(f"rollout gate: the subject of reward {ex.reward_id} is gone")
            key = (judged.contract_name, judged.contract_version, judged.contract_hash)
            if key not in compiled:
                compiled[key] = self._contract(*key)
            cases.append(rollout.RolloutCase(ex.prompt, judged.subject, compiled[key]))
        return cases

    def _contract(self, name: str, version: int, digest: str) -> CompiledContract:
        try:
            stored = self.contracts.get(name, version)
            if stored.content_hash != digest:
                raise Invalid(f"rollout gate: {name}@{version} hashes to {stored.content_hash[:12]}…, "
                              f"not {digest[:12]}… as when its rewards were made")
            return compile_contract(stored.parsed())
        except (VersionNotFound, ContractInvalid) as exc:
            raise Invalid(f"rollout gate: contract {name}@{version} cannot judge answers: {exc}") from exc


def _rollout_gate(inputs: GateInputs, policy: GatePolicy, harness: rollout.HarnessFactory,
                  successor: GateMetrics | None, parent: GateMetrics | None) -> dict[str, Any]:
    ours = _rollouts(inputs, harness, inputs.successor_dir, policy)
    theirs = _rollouts(inputs, harness, inputs.parent_dir, policy, reusable(inputs, policy))
    logged = [ex.reward for ex in rollout.latest(inputs.held_out, policy.rollout_prompts)]
    return {
        **judge_rollouts(ours, theirs, policy),
        "successor": _side(successor, ours), "parent": _side(parent, theirs),
        "rollouts": {"successor": ours.to_dict(), "parent": theirs.to_dict(),
                     "harness": policy.rollout_harness,
                     "max_new_tokens": policy.rollout_max_new_tokens,
                     "precision": inputs.precision,
                     # what the logged answers were rewarded, for scale
                     "logged_mean_reward": sum(logged) / len(logged)},
        # recorded, not gated (and only when the policy asks for it: it costs a pass over
        # the held-out examples with each model)
        "offline": judge(successor, parent, policy) if successor and parent else None,
        "pass_rate": {"successor": ours.pass_rate, "parent": theirs.pass_rate},
        "by_group": by_group(ours, theirs),
    }


def by_group(ours: rollout.RolloutMetrics, theirs: rollout.RolloutMetrics) -> dict[str, Any]:
    """Mean reward and pass rate of each template group, both models (where the harness
    labels its cases)."""
    if not ours.groups or ours.cases != theirs.cases or len(theirs.rewards) != len(ours.rewards):
        return {}
    rows: dict[str, Any] = {}
    for group in sorted(set(ours.groups)):
        at = [i for i, g in enumerate(ours.groups) if g == group]

        def mean(values: tuple[Any, ...], at: list[int] = at) -> float | None:
            return sum(float(values[i]) for i in at) / len(at) if values else None

        rows[group] = {"n": len(at), "successor": mean(ours.rewards), "parent": mean(theirs.rewards),
                       "pass_rate": {"successor": mean(ours.passes), "parent": mean(theirs.passes)}}
    return rows


def with_probes(record: dict[str, Any], inputs: GateInputs, policy: GatePolicy) -> dict[str, Any]:
    """The gate record with the non-inferiority check (``gate.probes``) when the policy asks
    for probe sets: parent and successor answer them, and a successor whose loss on one
    exceeds the margin with confidence is not promoted."""
    runner = probes.probe_runner()
    if policy.probe_tasks <= 0:
        return record
    if runner is None:
        return {**record, "non_inferiority": {"ok": True, "note": "no probe harness registered"}}

    def target(adapter: Path | None) -> rollout.RolloutTarget:
        return rollout.RolloutTarget(inputs.base_dir, adapter, policy.rollout_max_new_tokens,
                                     device=inputs.device, precision=inputs.precision)

    ours = runner(inputs.specialist, target(inputs.successor_dir), policy.probe_tasks, {})
    reuse = (probes.reusable_answers(inputs.parent_gate, target(inputs.parent_dir))
             if inputs.parent_dir is not None else {})
    theirs = runner(inputs.specialist, target(inputs.parent_dir), policy.probe_tasks, reuse)
    found, failures = probes.judge_probes(ours, theirs, policy.probe_margin, policy.confidence,
                                          policy.resamples, policy.seed, inputs.precision)
    record = {**record, "non_inferiority": found}
    if failures:
        why = "; ".join(failures)
        record.update(promote=False, reason=f"{record.get('reason', '')}; not promoted: {why}"
                      if record.get("promote") else f"{record.get('reason', '')}; {why}")
    return record


def _side(offline: GateMetrics | None, measured: rollout.RolloutMetrics) -> dict[str, Any]:
    if offline is None:
        return {"rollout_reward": measured.mean_reward, "n_rollouts": measured.n}
    return replace(offline, rollout_reward=measured.mean_reward, n_rollouts=measured.n).to_dict()


def reusable(inputs: GateInputs, policy: GatePolicy) -> tuple[list[str], str] | None:
    """The parent's answers from its own gate, when they answer exactly these cases.

    Greedy decoding with the same weights, harness, token limit, precision and cases in
    the same order gives the same answers, so the parent need not generate them again;
    they are judged again (checks and contract), since the contract may have changed.
    """
    record = inputs.parent_gate or {}
    rollouts = record.get("rollouts") or {}
    mine = rollouts.get("successor") or {}
    same = (rollouts.get("harness") == policy.rollout_harness
            and rollouts.get("max_new_tokens") == policy.rollout_max_new_tokens
            and rollouts.get("precision", "auto") == inputs.precision
            and list(mine.get("cases") or []) == [c.subject.id for c in inputs.cases]
            and len(mine.get("answers") or []) == len(inputs.cases))
    if not same or inputs.parent_dir is None:
        return None
    return list(mine["answers"]), f"the gate record of {inputs.parent_ref or 'the parent'}"


def _rollouts(inputs: GateInputs, factory: rollout.HarnessFactory, adapter: Path | None,
              policy: GatePolicy, reuse: tuple[list[str], str] | None = None) -> rollout.RolloutMetrics:
    target = rollout.RolloutTarget(inputs.base_dir, adapter, policy.rollout_max_new_tokens,
                                   max_prompt_tokens=inputs.max_len, device=inputs.device,
                                   precision=inputs.precision)
    harness = factory(target)
    if reuse is not None:
        return rollout.measure(harness, inputs.cases, texts=reuse[0], reused_from=reuse[1])
    return rollout.measure(harness, inputs.cases)
