"""Scoring a subject: aggregation, gates, errors, applicability, split and eligibility."""

from __future__ import annotations

import math

import pytest

from contract.document import ContractDocument, parse_contract
from contract.evaluate import compile_contract, evaluate_subject, split_for
from contract.inputs import build_input
from contract.split import subject_split
from contract.subject import finished_subjects
from tests.unit.contract.factories import EXAMPLE, Stream

HEAD = """
[contract]
name = "t"
description = "test"
schema_version = 1
[harness]
base_model = "hcp-tiny"
tool_allowlist = ["files.read"]
[harness.router]
default_specialist = "coding"
[harness.specialists.coding]
[harness.specialists.chat]
"""


def contract(
    criteria: list[tuple[str, float, str]],
    gates: list[tuple[str, str]] = (),  # type: ignore[assignment]
    aggregation: str = "weighted_mean",
    eligible: str = "true",
    applies: str = "",
    held_out: float = 0.0,
) -> ContractDocument:
    text = HEAD + f'[evaluation]\nsubject = "episode"\naggregation = "{aggregation}"\n'
    text += f"[evaluation.split]\nheld_out_fraction = {held_out}\n"
    text += f"[evaluation.applies_to]\n{applies}\n"
    for item_id, weight, expression in criteria:
        text += f'[[evaluation.criteria]]\nid = "{item_id}"\nweight = {weight}\nexpression = "{expression}"\n'
    for item_id, expression in gates:
        text += f'[[evaluation.gates]]\nid = "{item_id}"\nexpression = "{expression}"\n'
    text += f'[training]\neligible = "{eligible}"\n'
    return parse_contract(text)


def episode(specialist: str = "coding", outcome: str = "success", stream_id: str = "ep",
            question: str = "question") -> dict:
    s = Stream(stream_id, specialist=specialist)
    s.turn(question, "answer", rating=0.5)
    s.tool("c1", "files.read", ok=True)
    s.add("episode.completed", outcome=outcome)
    [subject] = finished_subjects(s.events, "episode")
    return build_input(subject, contract([("a", 1, "1.0")]).harness)


CONSTANTS = [("a", 1.0, "0.2"), ("b", 3.0, "0.8")]


@pytest.mark.parametrize(
    ("aggregation", "expected"),
    [
        ("weighted_mean", (1 * 0.2 + 3 * 0.8) / 4),
        ("min", 0.2),
        ("geometric_mean", math.exp((1 * math.log(0.2) + 3 * math.log(0.8)) / 4)),
    ],
)
def test_aggregation(aggregation: str, expected: float) -> None:
    result = evaluate_subject(contract(CONSTANTS, aggregation=aggregation), episode())
    assert result.score == pytest.approx(expected)
    assert result.components == {"a": 0.2, "b": 0.8}
    assert result.applicable and not result.errors


def test_geometric_mean_is_zero_when_a_criterion_is_zero() -> None:
    doc = contract([("a", 1.0, "0.0"), ("b", 1.0, "1.0")], aggregation="geometric_mean")
    assert evaluate_subject(doc, episode()).score == 0.0


def test_a_false_gate_forces_zero() -> None:
    doc = contract(CONSTANTS, gates=[("ok", "outcome == 'success'")])
    assert evaluate_subject(doc, episode()).gated is False
    failed = evaluate_subject(doc, episode(outcome="failure"))
    assert (failed.score, failed.gated, failed.gates) == (0.0, True, {"ok": False})
    assert failed.components == {"a": 0.2, "b": 0.8}  # still recorded, for the audit


def test_errors_are_recorded_and_give_no_score() -> None:
    # dyn(...) hides the types from validation, which would refuse these mistakes outright
    doc = contract(
        [("a", 1.0, "0.5"), ("missing", 1.0, "dyn(feedback).nope"), ("big", 1.0, "2.0")],
        gates=[("g", "dyn(1)")],
    )
    result = evaluate_subject(doc, episode())
    assert result.score is None
    assert result.eligible is False
    assert result.components == {"a": 0.5}
    kinds = {e.item: e.kind for e in result.errors}
    assert kinds == {"criterion:missing": "runtime", "criterion:big": "range", "gate:g": "type"}


def test_applicability() -> None:
    coding_only = contract(CONSTANTS, applies='specialists = ["coding"]')
    assert evaluate_subject(coding_only, episode("coding")).applicable
    skipped = evaluate_subject(coding_only, episode("chat"))
    assert (skipped.applicable, skipped.score, skipped.eligible) == (False, None, False)
    needs_feedback = contract(CONSTANTS, applies='event_types = ["x.never"]')
    assert not evaluate_subject(needs_feedback, episode()).applicable
    when = contract(CONSTANTS, applies="when = \"outcome == 'failure'\"")
    assert not evaluate_subject(when, episode()).applicable
    assert evaluate_subject(when, episode(outcome="failure")).applicable
    turn_contract = parse_contract(EXAMPLE.read_text().replace('subject = "episode"', 'subject = "turn"'))
    assert not evaluate_subject(turn_contract, episode()).applicable


def question_on(side: str) -> str:
    return next(q for q in (f"question {i}" for i in range(100)) if subject_split("", q) == side)


def test_eligibility_sees_the_result_and_applies_to_held_out_too() -> None:
    doc = contract(CONSTANTS, eligible="score > 0.6 && components.b == 0.8 && split == 'train'")
    assert evaluate_subject(doc, episode(question=question_on("train"))).eligible is True
    strict = contract(CONSTANTS, eligible="score > 0.9")
    assert evaluate_subject(strict, episode()).eligible is False
    result = evaluate_subject(contract(CONSTANTS), episode(question=question_on("held_out")))
    # held-out subjects pass the same quality bar: the trainer gates on them, never trains
    assert (result.split, result.eligible) == ("held_out", True)
    assert result.score == pytest.approx(0.65)
    train_only = contract(CONSTANTS, eligible="split == 'train'")
    assert evaluate_subject(train_only, episode(question=question_on("held_out"))).eligible is False


def test_the_split_is_the_subjects_under_every_contract() -> None:
    """Whatever a document's [evaluation.split] says (rule 1), a subject is on one side."""
    subject = episode(question=question_on("held_out"))
    documents = [contract(CONSTANTS), contract(CONSTANTS, held_out=0.999999),
                 contract(CONSTANTS, held_out=0.0)]
    assert {evaluate_subject(doc, subject).split for doc in documents} == {"held_out"}
    # every answer to one prompt lands on its side, whatever the session
    sides = {evaluate_subject(contract(CONSTANTS), episode(stream_id=f"ep{i}",
                                                           question=question_on("train"))).split
             for i in range(5)}
    assert sides == {"train"}


def test_split_is_deterministic_and_close_to_the_fraction() -> None:
    ids = [f"turn:s{i}:{i % 7}" for i in range(10_000)]
    first = [split_for(i, 0.2, 42) for i in ids]
    assert first == [split_for(i, 0.2, 42) for i in ids]
    held = first.count("held_out") / len(ids)
    assert 0.18 < held < 0.22
    reseeded = [split_for(i, 0.2, 43) for i in ids]
    assert reseeded != first
    assert split_for("x", 0.0, 1) == "train"


def test_the_example_contract_scores_a_realistic_episode() -> None:
    doc = parse_contract(EXAMPLE.read_text())
    compiled = compile_contract(doc)
    s = Stream("demo", specialist="coding")
    s.add("session.started", harness="cli")
    s.turn("my test fails", None)
    s.tool("c1", "files.read", ok=True, output="def f(): ...")
    s.tool("c2", "web.search", ok=False, error="not allowed")
    s.add("turn.assistant", text="Fixed the off-by-one.", tokens=6)
    s.add("feedback.given", thumbs="up")
    s.add("episode.completed", outcome="success")
    [subject] = finished_subjects(s.events, "episode")
    result = evaluate_subject(compiled, build_input(subject, doc.harness))
    assert result.errors == ()
    assert result.components == {
        "helpfulness": 1.0,
        "task_success": 1.0,
        "tool_discipline": 0.5,
        "no_tool_errors": 0.5,
        "brevity": 1.0,
    }
    assert result.score == pytest.approx((3 + 3 + 1 + 0.5 + 1) / 10)
    assert result.to_json()["contract_hash"] == compiled.content_hash
