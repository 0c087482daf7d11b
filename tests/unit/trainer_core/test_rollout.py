"""Rollout harness registry, judging a generated answer with the contract, the rollout gate."""

from __future__ import annotations

import pytest

from contract.document import parse_contract
from contract.evaluate import compile_contract
from contract.subject import Subject
from kernel.errors import Invalid
from tests.unit.contract.factories import Stream, minimal
from trainer.gate import rollout
from trainer.gate.decision import judge_rollouts
from trainer.gate.policy import GatePolicy
from trainer.gate.rollout import RolloutCase, RolloutMetrics, RolloutTarget

# "polite" reads the answer; "helpfulness" reads only the user's feedback; "boom" errors.
LAST = "turns[size(turns) - 1].assistant_text"
POLITE = f"{LAST} == 'boom' ? double(int({LAST})) : ({LAST}.startsWith('Hello') ? 1.0 : 0.0)"
CONTRACT = compile_contract(parse_contract(minimal("turn", **{
    'id = "discipline"': 'id = "polite"',
    'expression = "tool_calls.all(c, c.allowed) ? 1.0 : 0.0"': f'expression = "{POLITE}"',
})))


class Scripted:
    """Answers every prompt with one text; remembers what it was asked."""

    def __init__(self, answer: str) -> None:
        self.answer, self.asked = answer, []

    def generate(self, prompts):
        self.asked.append(list(prompts))
        return [self.answer for _ in prompts]


def subject(answer: str = "go away", rating: float = 1.0) -> Subject:
    stream = Stream()
    stream.turn("first question", "an earlier answer")
    stream.turn("say hello", answer, rating=rating)
    return Subject(f"turn:{stream.stream_id}:4", "turn", stream.stream_id, tuple(stream.events))


def case(prompt: str = "User: say hello\nAssistant: ", rating: float = 1.0) -> RolloutCase:
    return RolloutCase(prompt, subject(rating=rating), CONTRACT)


def metrics(mean: float, n: int = 4, **criteria: float) -> RolloutMetrics:
    return RolloutMetrics(mean_reward=mean, n=n, errors=0, per_criterion=criteria,
                          error_samples=(), responses_sha256="x")


def test_a_gate_picks_the_harness_its_policy_names_from_those_it_was_given():
    target = RolloutTarget("/models/base", None, max_new_tokens=8, max_prompt_tokens=64)
    given = {"text": lambda t: Scripted("text"), "echo": lambda t: Scripted(f"{t.max_new_tokens}")}
    assert rollout.pick_harness(given, "echo")(target).generate(["q"]) == ["8"]
    with pytest.raises(Invalid, match="no rollout harness 'nowhere'.*echo, text"):
        rollout.pick_harness(given, "nowhere")


def test_only_the_last_assistant_answer_is_replaced():
    original = subject("go away")
    changed = rollout.with_response(original, "Hello there")
    texts = [(e.type, e.payload.get("text")) for e in changed.events if e.type == "turn.assistant"]
    assert texts == [("turn.assistant", "an earlier answer"), ("turn.assistant", "Hello there")]
    assert changed.id == original.id and len(changed.events) == len(original.events)
    assert [e.payload.get("text") for e in original.events if e.type == "turn.assistant"][-1] == "go away"


def test_generated_answers_are_judged_by_the_contract_with_the_rest_of_the_subject():
    polite = rollout.judge_response(case(rating=1.0), "Hello! How can I help?")
    rude = rollout.judge_response(case(rating=1.0), "go away")
    # the feedback was given to the logged answer: it scores every answer the same
    assert polite.components == {"helpfulness": 1.0, "polite": 1.0}
    assert rude.components == {"helpfulness": 1.0, "polite": 0.0}
    assert polite.score == 1.0 and rude.score == 0.75


def test_measure_generates_once_per_prompt_and_counts_errors_as_zero():
    cases = [case("p1"), case("p2"), case("p1", rating=-1.0)]
    harness = Scripted("Hello")
    good = rollout.measure(harness, cases)
    assert harness.asked == [["p1", "p2"]]
    assert (good.n, good.errors, good.mean_reward) == (3, 0, pytest.approx((1 + 1 + 0.25) / 3))
    assert good.per_criterion == {"helpfulness": pytest.approx(2 / 3), "polite": 1.0}
    broken = rollout.measure(Scripted("boom"), cases)
    assert (broken.n, broken.errors, broken.mean_reward) == (3, 3, 0.0)
    assert broken.per_criterion["polite"] == 0.0
    assert len(broken.error_samples) == 1 and "criterion:polite" in broken.error_samples[0]
    assert rollout.measure(Scripted("Hello"), cases).responses_sha256 == good.responses_sha256


def test_the_latest_held_out_examples_are_the_ones_answered():
    assert rollout.latest(["a", "b", "c"], 2) == ["b", "c"]  # type: ignore[list-item]
    assert rollout.latest(["a"], 32) == ["a"]  # type: ignore[list-item]


def test_the_rollout_gate_needs_a_strictly_better_mean_reward():
    policy = GatePolicy(metric="rollout", margin=0.0)
    passed = judge_rollouts(metrics(0.6), metrics(0.5), policy)
    assert passed["promote"], passed["reason"]
    assert passed["comparison"]["rollout_reward"]["delta"] == pytest.approx(0.1)
    tie = judge_rollouts(metrics(0.5), metrics(0.5), policy)
    assert not tie["promote"] and "not more than 0.0 above" in tie["reason"]
    short = judge_rollouts(metrics(0.55), metrics(0.5), GatePolicy(margin=0.1))
    assert not short["promote"]
    assert not judge_rollouts(metrics(0.0, n=0), metrics(0.0, n=0), policy)["promote"]


def test_a_gated_criterion_that_regresses_in_rollouts_blocks_promotion():
    policy = GatePolicy(metric="rollout", regression_tolerance={"polite": 0.05})
    decision = judge_rollouts(metrics(0.9, polite=0.5, style=0.0), metrics(0.5, polite=0.7, style=1.0),
                              policy)
    assert not decision["promote"] and "'polite' regressed" in decision["reason"]
    assert decision["comparison"]["criteria"]["style"]["gated"] is False
