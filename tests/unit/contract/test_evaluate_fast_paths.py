"""The contract engine's shortcuts give exactly what the long way gives: the criteria and
gates run as one program, map variables converted with only the fields the contract
reads, and an input built with only the variables it reads."""

from __future__ import annotations

from dataclasses import replace

import pytest

from contract import cel_functions, cel_scan
from contract.cel_binding import value_units
from contract.document import parse_contract
from contract.evaluate import CompiledContract, compile_contract, evaluate_subject
from contract.inputs import build_input
from contract.rubric import CompiledExpression, Limits
from contract.subject import Subject, finished_subjects
from contract.vocabulary import INPUT_VARIABLES
from tests.unit.contract.factories import EXAMPLE, Stream
from tests.unit.contract.test_evaluate import contract, episode

CASES = {
    "constants": ([("a", 1.0, "0.2"), ("b", 3.0, "0.8")], []),
    "reads": ([("fb", 2.0, "feedback.count > 0 ? (feedback.rating + 1.0) / 2.0 : 0.5"),
               ("short", 1.0, "size(assistant_text) <= 400 ? 1.0 : 0.5")],
              [("tools", "counts.tools_disallowed == 0")]),
    "a false gate": ([("a", 1.0, "1.0")], [("never", "counts.events < 0")]),
    "a missing key": ([("ok", 1.0, "1.0"), ("bad", 1.0, "counts.by_type['nope'] > 0 ? 1.0 : 0.0")],
                      [("g", "true")]),
    "null, out of range": ([("null", 1.0, "outcome_score > 0.5 ? 1.0 : 0.0"),
                            ("big", 1.0, "double(counts.events)")], [("g", "outcome == 'success'")]),
    "a loop": ([("loop", 1.0, "events.filter(e, e.type == 'turn.user').size() > 0 ? 1.0 : 0.0")],
               [("all", "tool_calls.all(c, c.allowed)")]),
    "a trailing comment": ([("c", 1.0, "0.5 // half")], [("g", "true // always")]),
    "fields and wholes": ([("f", 1.0, "has(feedback.rating) && feedback.count > 0 ? 1.0 : 0.0"),
                           ("w", 1.0, "size(feedback) > 3 ? 1.0 : 0.0")],
                          [("t", "counts.by_type['turn.user'] == 1 && has(counts.turns)")]),
    "a field that is not there": ([("m", 1.0, "has(counts.nope) ? 0.0 : 1.0")],
                                  [("n", "counts.by_type.size() > 0")]),
}


def one_by_one(compiled: CompiledContract) -> CompiledContract:
    """The long way: each expression alone, every variable converted whole."""
    def whole(expression: CompiledExpression) -> CompiledExpression:
        return replace(expression, projections={})

    return replace(compiled, items=None, eligible=whole(compiled.eligible),
                   criteria={k: whole(e) for k, e in compiled.criteria.items()},
                   gates={k: whole(e) for k, e in compiled.gates.items()})


@pytest.mark.parametrize("case", list(CASES))
def test_the_items_as_one_program_give_what_they_give_one_by_one(case: str) -> None:
    criteria, gates = CASES[case]
    compiled = compile_contract(contract(criteria, gates, eligible="score >= 0.5"))
    subject_input = episode()
    assert compiled.items is not None
    assert evaluate_subject(compiled, subject_input) == evaluate_subject(one_by_one(compiled), subject_input)


def test_map_variables_read_by_field_are_converted_with_those_fields_only() -> None:
    compiled = compile_contract(contract(*CASES["reads"], eligible="score > 0.5 && counts.turns > 0"))
    assert compiled.items is not None
    assert compiled.items.projections == {
        "counts": {"tools_disallowed", "turns"}, "feedback": {"count", "rating"}}
    assert compiled.eligible.projections == compiled.items.projections  # one shape per subject
    whole = compile_contract(contract(*CASES["fields and wholes"]))
    assert whole.eligible.projections == {"counts": {"by_type", "turns"}}  # feedback: size() reads it all


def test_fuel_is_charged_for_the_whole_value_of_a_variable_read_by_field() -> None:
    doc = contract([("a", 1.0, "counts.turns > 0 ? 1.0 : 0.0")])
    subject_input = episode()
    whole_units = value_units(subject_input["counts"])
    for fuel in (whole_units - 1, whole_units):
        compiled = compile_contract(doc, Limits(fuel=fuel))
        result = evaluate_subject(compiled, subject_input)
        assert result == evaluate_subject(one_by_one(compiled), subject_input)
        assert [e.kind for e in result.errors] == (["budget"] if fuel < whole_units else [])


def test_a_group_over_one_expressions_fuel_falls_back_and_each_keeps_its_own() -> None:
    # Each criterion reads `events` once: alone each fits the fuel, together they do not.
    reads = "size(events) > 0 ? 1.0 : 0.0"
    doc = contract([("a", 1.0, reads), ("b", 1.0, reads), ("c", 1.0, reads)])
    subject_input = episode()
    compiled = compile_contract(doc, Limits(fuel=value_units(subject_input["events"]) + 5))
    result = evaluate_subject(compiled, subject_input)
    assert not result.errors and result.components == {"a": 1.0, "b": 1.0, "c": 1.0}
    assert result == evaluate_subject(one_by_one(compiled), subject_input)


def test_an_expression_over_its_own_fuel_still_fails_on_its_own_item() -> None:
    doc = contract([("cheap", 1.0, "1.0"), ("dear", 1.0, "size(events) > 0 ? 1.0 : 0.0")])
    compiled = compile_contract(doc, Limits(fuel=3))
    result = evaluate_subject(compiled, episode())
    assert [(e.item, e.kind) for e in result.errors] == [("criterion:dear", "budget")]
    assert result == evaluate_subject(one_by_one(compiled), episode())


def realistic_subject() -> Subject:
    s = Stream("ep-1", specialist="coding")
    s.turn("read a.py", "It prints 1.", rating=1.0)
    s.tool("c1", "files.read", ok=True, output="print(1)")
    s.tool("c2", "web.search", ok=False, error="timeout")
    s.add("x.custom.metric", value={"deep": [1, 2, 3]})
    s.add("episode.completed", outcome="success", score=0.9)
    [subject] = finished_subjects(s.events, "episode")
    return subject


@pytest.mark.parametrize("names", [
    {"counts"}, {"feedback", "user_text", "subject"}, {"outcome_score", "duration_s", "specialist"},
    {"events", "turns", "tool_calls", "harness"}, set(INPUT_VARIABLES) - {"truncated", "judge"},
])
def test_an_input_of_some_variables_has_their_full_values(names: set[str]) -> None:
    subject, harness = realistic_subject(), contract([("a", 1, "1.0")]).harness
    full = build_input(subject, harness)
    assert build_input(subject, harness, names) == {name: full[name] for name in names}


def test_asking_for_truncated_builds_everything() -> None:
    subject, harness = realistic_subject(), contract([("a", 1, "1.0")]).harness
    assert build_input(subject, harness, {"truncated"}) == build_input(subject, harness)


def test_a_contract_reads_its_expressions_variables_and_what_the_engine_needs() -> None:
    compiled = compile_contract(contract(*CASES["reads"], eligible="score > 0.5 && size(turns) > 0"))
    assert compiled.reads == {"feedback", "assistant_text", "counts", "turns",
                              "subject", "user_text", "specialists"}
    example = compile_contract(parse_contract(EXAMPLE.read_text()))
    assert example.reads <= set(INPUT_VARIABLES)


@pytest.mark.parametrize(("source", "expected"), [
    ("counts.a > 0 && counts.b.size() > 1", {"counts": {"a", "b"}}),
    ("has(counts.q) ? feedback.rating : 0.0", {"counts": {"q"}, "feedback": {"rating"}}),
    ("size(counts) > 0", {"counts": None}),
    ("'a' in counts || counts.x > 0", {"counts": None}),
    ("counts.?x.orValue(0) > 0", {"counts": None}),
    ("counts.all(k, k != '')", {"counts": None}),
    ("events.map(counts, counts.x).size() > 0", {"events": None, "counts": None}),
    ("'counts.x' == user_text", {"user_text": None}),
])
def test_which_fields_an_expression_reads(source: str, expected: dict) -> None:
    scanned = cel_scan.scan(source, max_depth=32, max_macro_depth=2, namespaces=cel_functions.NAMESPACES)
    assert cel_scan.field_reads(scanned, {"counts", "feedback", "events", "user_text"}) == expected
