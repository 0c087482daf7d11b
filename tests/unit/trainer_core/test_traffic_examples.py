"""Examples from chat traffic (trainer/datasets/traffic.py): a correction is a better answer
to the same prompt, a question asked again is rendered as its first asking was, and the
preference objective gets its pairs from them; what a run selects is derived again the
same way (the audit's check)."""

from __future__ import annotations

from trainer.datasets.manifest import (
    TRAIN,
    EventView,
    Manifest,
    ManifestExample,
    RewardRow,
    assemble,
    example_line,
)
from trainer.datasets.traffic import CORRECTION, training_examples
from trainer.ml.data import preference_pairs, selected_examples
from trainer.runs.selection import selection_of

SYSTEM = (("system", "You are helpful."),)


def ev(i: int, type_: str, **payload) -> EventView:
    return EventView(f"e{i}", i, type_, payload)


def test_a_correction_sent_after_the_answer_is_in_its_example_and_only_then_in_its_digest() -> None:
    events = [ev(1, "turn.user", text="2+2?", context=[{"role": "system", "content": "You are helpful."}]),
              ev(2, "turn.assistant", text="5"), ev(3, "feedback.given", rating=-1.0, correction="4")]
    row = RewardRow("r1", 10, "turn:s:1", ("e1", "e2", "e3"), "c", 1, "h", 0.1, {}, TRAIN)
    [example] = assemble("chat", 0, 10, [row], {e.event_id: e for e in events}).examples
    assert example.correction == "4" and example.messages == (*SYSTEM, ("user", "2+2?"))
    plain = assemble("chat", 0, 10, [row], {e.event_id: e for e in events[:2]}).examples[0]
    assert plain.correction is None and b"correction" not in example_line(plain)


QUESTION = "User: capital of France?\nAssistant: "


def example(reward_id: str, subject: str, response: str, reward: float, messages=None,
            correction: str | None = None) -> ManifestExample:
    return ManifestExample(reward_id=reward_id, subject_id=subject, split=TRAIN, prompt=QUESTION,
                           response=response, reward=reward, messages=messages, correction=correction)


EXAMPLES = (
    example("a", "turn:s:2", "Lyon", 0.2, SYSTEM, correction="Paris"),  # corrected
    example("b", "turn:s:5", "Marseille", 0.1),  # asked again in the session: no context
    example("c", "turn:t:2", "It is Paris.", 0.9, SYSTEM),  # another user, kept
)


def test_without_traffic_the_manifest_examples_are_taken_as_they_are() -> None:
    made = training_examples(EXAMPLES, {})
    assert [r for r, _ in made] == ["a", "b", "c"] and made[1][1].messages is None


def test_traffic_adds_the_correction_and_renders_a_repeated_question_as_first_asked() -> None:
    made = dict((ex.subject_id, (r, ex)) for r, ex in training_examples(EXAMPLES, {"traffic": True}))
    reward_id, corrected = made["turn:s:2" + CORRECTION]
    assert reward_id == "a" and corrected.response == "Paris" and corrected.reward == 1.0
    assert corrected.messages == SYSTEM
    assert made["turn:s:5"][1].messages == SYSTEM  # the repeated question, as first asked
    low = training_examples(EXAMPLES, {"traffic": True, "correction_reward": 0.7})
    assert [ex.reward for _, ex in low if ex.subject_id.endswith(CORRECTION)] == [0.7]


def test_the_preference_objective_pairs_the_correction_over_what_it_replaced() -> None:
    examples = [ex for _, ex in training_examples(EXAMPLES, {"traffic": True})]
    pairs = {(c.response, r.response) for c, r, _ in preference_pairs(examples, 0.5)}
    assert ("Paris", "Lyon") in pairs and ("Paris", "Marseille") in pairs
    assert all(c.messages == r.messages for c, r, _ in preference_pairs(examples, 0.5))
    assert selected_examples(examples, "all", 1, 0.5, "dpo")  # something to train on


def test_a_run_selection_names_the_corrected_rewards_and_is_derived_again_the_same() -> None:
    manifest = Manifest("chat", 0, 9, ("a", "b", "c"), {}, (), {TRAIN: 3}, "x", EXAMPLES)
    hyper = {"traffic": True, "selection": "best_of_k", "keep_per_prompt": 2, "min_reward": 0.8}
    chosen = selection_of(manifest, hyper)
    assert chosen.reward_ids == ["a", "c"]  # a: its correction (1.0); c: kept (0.9)
    assert selection_of(manifest, hyper) == chosen
    plain = {"selection": "best_of_k", "keep_per_prompt": 2, "min_reward": 0.8}
    assert selection_of(manifest, plain).reward_ids == ["c"]


class Judge9:
    """A judge model that likes everything (the unit tests' fake of the port)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def ask(self, request):
        from evaluators.judging import JudgeAnswer

        self.asked.append(request.prompt_hash)
        return JudgeAnswer("9", "test")


def test_the_rollout_gate_has_a_generated_answer_judged_by_the_contracts_judge() -> None:
    from contract.document import parse_contract
    from contract.evaluate import compile_contract
    from contract.subject import finished_subjects
    from evaluators.judging import Judging
    from events.memory_store import InMemoryEventStore
    from tests.unit.contract.factories import Stream
    from tests.unit.contract.test_judges import judged_text
    from trainer.gate.rollout import RolloutCase, judge_response, judged_by

    stream = Stream(specialist="chat")
    stream.turn("What is 2+2?", "5")
    stream.add("turn.user", text="thanks")
    subject = finished_subjects(stream.events, "turn")[0]
    compiled = compile_contract(parse_contract(judged_text()))
    model, store = Judge9(), InMemoryEventStore()
    case = RolloutCase("User: What is 2+2?\nAssistant: ", subject, compiled, judged_by(Judging(store, model)))
    evaluation = judge_response(case, "4")
    assert evaluation.components["judged"] == 8 / 9 and evaluation.judgements[0]["verdict"] == "9"
    assert judge_response(case, "4").judgements == evaluation.judgements and len(model.asked) == 1
    judge_response(case, "four")
    assert len(model.asked) == 2  # another answer, another prompt
    unjudged = judge_response(RolloutCase(case.prompt, subject, compiled), "4")
    assert unjudged.score is None  # without the judge the contract cannot score it
