"""Type mistakes CEL can see statically are refused when a draft is validated."""

from __future__ import annotations

from typing import Any

import pytest

from contract.cel_schema import INPUT_TYPES, T
from contract.cel_types import TypeMistake, infer
from contract.document import ContractInvalid, parse_contract
from tests.unit.contract.factories import EXAMPLE
from tests.unit.contract.test_evaluate import HEAD, episode


def criterion_doc(expression: str, gate: str = "true") -> str:
    return HEAD + ('[evaluation]\nsubject = "episode"\n[[evaluation.criteria]]\nid = "c"\n'
                   f'weight = 1.0\nexpression = "{expression}"\n'
                   f'[[evaluation.gates]]\nid = "g"\nexpression = "{gate}"\n')


@pytest.mark.parametrize("expression, message", [
    ("1.0 - counts.tool_errors / counts.tool_calls", "'-' mixes double and int"),
    ("size(turns) * 0.5", "'*' mixes int and double"),
    ("feedback.rating + 1", "'+' mixes double and int"),
    ("turns[0].tokens / 2.0", "'/' mixes int and double"),
    ("counts.tool_call > 0 ? 1.0 : 0.0", "no field 'tool_call'"),
    ("outcome == 'success'", "must yield a number, but yields bool"),
])
def test_an_int_double_mix_a_misspelt_field_or_a_wrong_result_is_refused(expression, message):
    with pytest.raises(ContractInvalid) as caught:
        parse_contract(criterion_doc(expression))
    [problem] = caught.value.problems
    assert problem.kind == "type" and message in problem.message
    assert problem.path == "evaluation.criteria[0].expression"


def test_the_position_points_at_the_operator():
    with pytest.raises(ContractInvalid) as caught:
        parse_contract(criterion_doc("counts.turns == 0 ? 1.0 : 1.0 - counts.turns"))
    [problem] = caught.value.problems
    assert (problem.expression_line, problem.expression_column) == (1, 31)


def test_a_gate_must_yield_a_bool():
    with pytest.raises(ContractInvalid, match="gate 'g': must yield a bool, but yields double"):
        parse_contract(criterion_doc("1.0", gate="duration_s"))


@pytest.mark.parametrize("expression", [
    "double(counts.tool_errors) / double(counts.tool_calls)",
    "feedback.count > 0 ? (feedback.rating + 1.0) / 2.0 : 0.5",
    "has(counts.nope) ? 1.0 : 0.0",  # has() tests for the field: no error for its absence
    "dyn(counts.turns) * 0.5",  # dyn() opts out
    "events.exists(e, e.payload.score + 1 > 0) ? 1.0 : 0.0",  # payloads are free JSON
    "counts.turns > 0.5 ? 1 : 0",  # comparisons across numeric types are fine in CEL
    "math.greatest([0.2, 0.4])",
    "turns.filter(t, t.answered).size() == 0 ? 0.0 : 1.0",
])
def test_what_may_be_right_at_run_time_passes(expression):
    parse_contract(criterion_doc(expression))


def test_the_example_contract_is_clean():
    parse_contract(EXAMPLE.read_text())


def test_infer_follows_operators_and_functions():
    variables = INPUT_TYPES
    assert infer("double(counts.turns) / 2.0", variables).kind == "double"
    assert infer("[1, 2].map(x, x * 2)", variables).elem.kind == "int"  # type: ignore[union-attr]
    assert infer("tool_calls.filter(c, c.ok)[0].tool", variables).kind == "string"
    assert infer("1u + 1u", variables).kind == "uint"
    with pytest.raises(TypeMistake, match="uint and int"):
        infer("1u + 1", variables)
    with pytest.raises(TypeMistake, match="not defined for string and int"):
        infer("'a' + 1", variables)


def _check(value: Any, declared: T, path: str, wrong: list[str]) -> None:
    if declared.kind == "dyn" or value is None:
        return
    kind = {bool: "bool", int: "int", float: "double", str: "string", list: "list",
            dict: "map"}[type(value)]
    if kind != declared.kind:
        wrong.append(f"{path}: {kind} is declared {declared.kind}")
    if declared.fields is not None:
        if set(value) != {name for name, _ in declared.fields}:
            wrong.append(f"{path}: keys {sorted(value)} are declared {declared.fields}")
        for name, field in declared.fields:
            _check(value.get(name), field, f"{path}.{name}", wrong)
    elif declared.elem is not None:
        for item in value if isinstance(value, list) else value.values():
            _check(item, declared.elem, f"{path}[]", wrong)


def test_declared_types_match_a_real_input():
    from contract.judges import Judge, Verdict, read, variable

    judge = Judge(id="quality", model="sha256:" + "0" * 64, prompt="{{assistant_text}}")
    # ``judge`` comes from the judges' verdicts (contract/judged.py), not from the events.
    real = {**episode(), "judge": {"quality": variable(judge, Verdict("7"), read(judge, "7"))}}
    wrong: list[str] = []
    assert set(real) == set(INPUT_TYPES)
    for name, declared in INPUT_TYPES.items():
        _check(real[name], declared, name, wrong)
    assert wrong == []
