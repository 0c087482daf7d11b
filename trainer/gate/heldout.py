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
from evaluators.judging import Judging
from kernel.errors import Invalid
from trainer.datasets.manifest import ManifestExample
from trainer.datasets.manifests import Manifests
from trainer.gate import probes, rollout
from trainer.gate.decision import judge, judge_rollouts, with_power
from trainer.gate.policy import GatePolicy
from trainer.gate.shapes import GateJson, GroupRow, Setting
from trainer.gate.verdict import GateRecord
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
    parent_gate: GateRecord | None = None  # the parent's own gate record, if any
    parent_ref: str | None = None  # which version the parent is (e.g. coding@2)
    specialist: str = ""  # whose probe sets (the unseen templates) the gate answers
    # The bytes by digest (the memo and the engine's pool key on them; "" / None: hashed
    # when needed): the base's weights, the successor's and the parent's artifacts.
    base_sha256: str = ""
    base_name: str = ""
    successor_sha256: str | None = None
    parent_sha256: str | None = None

    def target(self, adapter: Path | None, max_new_tokens: int,
               max_prompt_tokens: int | None = None) -> rollout.RolloutTarget:
        """The successor (``adapter`` its directory), the parent, or the bare base (None)."""
        digest = (self.successor_sha256 if adapter == self.successor_dir else
                  self.parent_sha256 if adapter is not None and adapter == self.parent_dir else None)
        return rollout.RolloutTarget(self.base_dir, adapter, max_new_tokens, max_prompt_tokens,
                                     self.device, self.precision, self.base_sha256, digest,
                                     self.base_name)


class Gate:
    """Successor against parent, under a run's gate policy.

    ``harnesses`` are the rollout harnesses a policy may name (``rollout.BUILT_IN`` and those
    the composition root adds: some live above the trainer)."""

    def __init__(self, manifests: Manifests, contracts: ContractVersions,
                 harnesses: Mapping[str, rollout.HarnessFactory],
                 judging: Judging | None = None) -> None:
        self.manifests, self.contracts = manifests, contracts
        self.harnesses = harnesses
        # The judges of contracts that have them, for the rollout gate's verdicts.
        self.judged = rollout.judged_by(judging) if judging is not None else None

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

    def judge(self, inputs: GateInputs, policy: GatePolicy) -> GateRecord:
        """The decision and what it saw (``metrics.gate``)."""
        return GateRecord.model_validate(with_power(self._judged(inputs, policy), policy))

    def _judged(self, inputs: GateInputs, policy: GatePolicy) -> GateJson:
        from trainer.ml.metrics import heldout_metric

        held_out = inputs.held_out
        if not held_out:
            return {"promote": False, "reason": "no held-out examples to compare on",
                    "comparison": {}, "metric": policy.metric}
        record: Setting = {"metric": policy.metric, "parent_is_base": inputs.parent_dir is None,
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
            contract = compiled[key]
            judges = bool(contract.document.evaluation.judges)
            cases.append(rollout.RolloutCase(ex.prompt, judged.subject, contract,
                                             self.judged if judges else None))
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
                  successor: GateMetrics | None, parent: GateMetrics | None) -> GateJson:
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


def by_group(ours: rollout.RolloutMetrics, theirs: rollout.RolloutMetrics) -> dict[str, GroupRow]:
    """Mean reward and pass rate of each template group, both models (where the harness
    labels its cases)."""
    if not ours.groups or ours.cases != theirs.cases or len(theirs.rewards) != len(ours.rewards):
        return {}
    rows: dict[str, GroupRow] = {}
    for group in sorted(set(ours.groups)):
        at = [i for i, g in enumerate(ours.groups) if g == group]

        def mean(values: tuple[Any, ...], at: list[int] = at) -> float | None:
            return sum(float(values[i]) for i in at) / len(at) if values else None

        rows[group] = {"n": len(at), "successor": mean(ours.rewards), "parent": mean(theirs.rewards),
                       "pass_rate": {"successor": mean(ours.passes), "parent": mean(theirs.passes)}}
    return rows


def with_probes(record: GateJson, inputs: GateInputs, policy: GatePolicy) -> GateJson:
    """The gate record with the non-inferiority check (``gate.probes``) when the policy asks
    for probe sets: parent and successor answer them, and a successor whose loss on one
    exceeds the margin with confidence is not promoted."""
    runner = probes.probe_runner()
    if policy.probe_tasks <= 0:
        return record
    if runner is None:
        return {**record, "non_inferiority": {"ok": True, "note": "no probe harness registered"}}

    def target(adapter: Path | None) -> rollout.RolloutTarget:
        return inputs.target(adapter, policy.rollout_max_new_tokens)

    ours = runner(inputs.specialist, target(inputs.successor_dir), policy.probe_tasks, {})
    reuse = (probes.reusable_answers(inputs.parent_gate, target(inputs.parent_dir))
             if inputs.parent_dir is not None else {})
    theirs = runner(inputs.specialist, target(inputs.parent_dir), policy.probe_tasks, reuse)
    found, failures = probes.judge_probes(ours, theirs, policy.probe_margin, policy.confidence,
                                          policy.resamples, policy.seed, inputs.precision,
                                          policy.probe_power)
    record = {**record, "non_inferiority": found}
    if failures:
        why = "; ".join(failures)
        record.update({"promote": False,
                       "reason": f"{record.get('reason', '')}; not promoted: {why}"
                       if record.get("promote") else f"{record.get('reason', '')}; {why}"})
    return record


def _side(offline: GateMetrics | None, measured: rollout.RolloutMetrics) -> Mapping[str, object]:
    if offline is None:
        return {"rollout_reward": measured.mean_reward, "n_rollouts": measured.n}
    return replace(offline, rollout_reward=measured.mean_reward, n_rollouts=measured.n).to_dict()


def reusable(inputs: GateInputs, policy: GatePolicy) -> tuple[list[str], str] | None:
    """The parent's answers from its own gate, when they answer exactly these cases.

    Greedy decoding with the same weights, harness, token limit, precision and cases in
    the same order gives the same answers, so the parent need not generate them again;
    they are judged again (checks and contract), since the contract may have changed.
    """
    rollouts = inputs.parent_gate.rollouts if inputs.parent_gate is not None else None
    mine = rollouts.successor if rollouts is not None else None
    if rollouts is None or mine is None or inputs.parent_dir is None:
        return None
    same = (rollouts.harness == policy.rollout_harness
            and rollouts.max_new_tokens == policy.rollout_max_new_tokens
            and rollouts.precision == inputs.precision
            and mine.cases == [c.subject.id for c in inputs.cases]
            and len(mine.answers) == len(inputs.cases))
    if not same:
        return None
    return list(mine.answers), f"the gate record of {inputs.parent_ref or 'the parent'}"


def _rollouts(inputs: GateInputs, factory: rollout.HarnessFactory, adapter: Path | None,
              policy: GatePolicy, reuse: tuple[list[str], str] | None = None) -> rollout.RolloutMetrics:
    harness = factory(inputs.target(adapter, policy.rollout_max_new_tokens, inputs.max_len))
    if reuse is not None:
        return rollout.measure(harness, inputs.cases, texts=reuse[0], reused_from=reuse[1])
    return rollout.measure(harness, inputs.cases)
