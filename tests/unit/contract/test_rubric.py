"""The rubric language: compile-time limits, bounded evaluation, errors as values."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from contract.rubric import (
    DEFAULT_LIMITS,
    EvaluationError,
    ExpressionError,
    Limits,
    as_bool,
    as_score,
    compile_expression,
    evaluate,
)

NAMES = ("items", "text", "feedback", "outcome", "counts")


def run(source: str, limits: Limits = DEFAULT_LIMITS, **variables: object) -> object:
    return evaluate(compile_expression(source, NAMES, limits), variables, limits)


def refused(source: str) -> ExpressionError:
    with pytest.raises(ExpressionError) as caught:
        compile_expression(source, NAMES)
    return caught.value


# The fuel is what must stop these (it is deterministic); a far wall-clock deadline keeps a
# busy machine from stopping them first, and CPU time (not wall time) shows they were cheap.
FUEL_ONLY = Limits(deadline_s=60.0)


def bounded(source: str, limits: Limits = DEFAULT_LIMITS, **variables: object) -> EvaluationError:
    started = time.process_time()
    result = run(source, limits, **variables)
    assert time.process_time() - started < 2.0
    assert isinstance(result, EvaluationError), result
    return result


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("[1, 2, 3].map(x, x * 2)", [2, 4, 6]),
        ("[1, 2, 3].map(x, x > 1, x * 10)", [20, 30]),
        ("[1, 2, 3].filter(x, x != 2)", [1, 3]),
        ("[1, 2, 3].exists_one(x, x == 2)", True),
        ("[1, 2, 3].all(x, x > 0) && ![1, 2].exists(x, x > 5)", True),
        ("{'a': 1, 'b': 2}.all(k, k in ['a', 'b'])", True),
        ("[[1, 2], [3]].map(l, l.map(y, y + 1))", [[2, 3], [4]]),
        ("'x' in ['x'] && 'Abc'.lowerAscii() == 'abc' && math.greatest([1, 5]) == 5", True),
        ("sum([0.25, 0.5]) // a comment\n + 0.0", 0.75),
    ],
)
def test_metering_rewrite_keeps_the_meaning(source: str, expected: object) -> None:
    assert run(source) == expected


def test_syntax_error_has_a_position() -> None:
    error = refused("counts.turns >\n  ")
    assert error.line == 2
    assert "Syntax error" in error.message


def test_unknown_names_are_refused() -> None:
    assert "unknown variable 'itemz'" in refused("itemz.size() > 0").message
    assert "unknown function 'eval'" in refused("eval('1')").message
    assert refused("items.size() + system(1)").column == 16
    assert "reserved" in refused("__hcp_tick()").message


def test_overlong_and_deeply_nested_expressions_are_refused_before_compiling() -> None:
    assert "longer than 4096" in refused("1 + " * 2000 + "1").message
    assert "nesting deeper" in refused("(" * 40 + "1" + ")" * 40).message
    assert "nesting deeper" in refused("[" * 500).message
    triple = "items.all(a, items.all(b, items.all(c, a == b)))"
    error = refused(triple)
    assert "comprehensions nested deeper" in error.message
    assert error.column == triple.index("all(c") + 1


@pytest.mark.parametrize("source", ["-" * 4000 + "1", "!" * 4000 + "true", "- " * 2000 + "1",
                                    "-(" * 16 + "-" * 17 + "1" + ")" * 16])
def test_unary_operators_count_towards_the_nesting_limit(source: str) -> None:
    # Each '-' or '!' nests its operand one level deeper, as a bracket does; thousands
    # of them overflowed the type pass's recursion (a 500 where the limit gives a 422).
    assert "nesting deeper than 32" in refused(source).message


def test_unary_operators_within_the_limit_compile() -> None:
    assert compile_expression("-(" * 10 + "-" * 12 + "1" + ")" * 10, []).source  # 32 levels
    assert compile_expression("!(1 != 2) && -1 - -1 == 0", []).source


def test_nested_loops_over_input_are_stopped_by_the_budget() -> None:
    error = bounded("items.map(a, items.map(b, a + b)).size() > 0", FUEL_ONLY, items=list(range(2000)))
    assert error.kind == "budget"


def test_list_amplification_is_stopped() -> None:
    doubled = "(" + " + ".join(["items"] * 60) + ").map(a, a).size() > 0"
    assert bounded(doubled, items=list(range(5000))).kind in ("budget", "deadline")


def test_string_amplification_is_stopped() -> None:
    error = bounded("items.map(a, text + text + text).size() > 0", FUEL_ONLY, items=list(range(300)),
                    text="x" * 16000)
    assert error.kind == "budget"
    error = bounded("items.map(a, text).join('').size() > 0", FUEL_ONLY, items=list(range(2000)),
                    text="y" * 16000)
    assert error.kind == "budget"


def test_loops_over_literals_are_stopped() -> None:
    literal = "[" + ",".join(["0"] * 400) + "]"
    assert bounded(f"{literal}.map(a, {literal}.map(b, b)).size() > 0").kind == "budget"


def test_regular_expressions_cannot_backtrack() -> None:
    # cel-rust uses a linear-time regex engine, so the classic catastrophic pattern is cheap.
    started = time.monotonic()
    assert run("text.matches('^(a+)+$')", text="a" * 5000 + "!") is False
    assert time.monotonic() - started < 1.0


def test_runtime_errors_are_values_not_exceptions() -> None:
    missing = run("feedback.rating > 0.5", feedback={})
    assert isinstance(missing, EvaluationError)
    assert "rating" in missing.message
    null_math = run("(feedback.rating + 1.0) / 2.0", feedback={"rating": None})
    assert isinstance(null_math, EvaluationError)
    assert null_math.kind == "type"
    assert isinstance(run("1 / (counts.turns - counts.turns)", counts={"turns": 2}), EvaluationError)
    assert isinstance(run("items[5] == 1", items=[1]), EvaluationError)


def test_null_inputs_are_visible_as_null() -> None:
    assert run("outcome == null ? 0.0 : 1.0", outcome=None) == 0.0


def test_scores_must_be_numbers_in_the_unit_interval() -> None:
    assert as_score(1, "criterion:a") == 1.0
    assert as_score(0.25, "criterion:a") == 0.25
    out_of_range = as_score(1.5, "criterion:a")
    assert isinstance(out_of_range, EvaluationError)
    assert (out_of_range.item, out_of_range.kind) == ("criterion:a", "range")
    assert isinstance(as_score(True, "criterion:a"), EvaluationError)
    assert isinstance(as_score(float("nan"), "criterion:a"), EvaluationError)
    assert isinstance(as_score("0.5", "criterion:a"), EvaluationError)
    assert as_bool(True, "gate:g") is True
    assert isinstance(as_bool(1, "gate:g"), EvaluationError)
    named = as_score(EvaluationError("", "boom"), "criterion:b")
    assert isinstance(named, EvaluationError)
    assert named.item == "criterion:b"


def test_evaluation_is_safe_from_many_threads() -> None:
    compiled = compile_expression("items.filter(x, x % 2 == 0).size()", NAMES)

    def one(n: int) -> object:
        return evaluate(compiled, {"items": list(range(n))})

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(one, range(200)))
    assert results == [(n + 1) // 2 for n in range(200)]


HIDING_PREFIXES = [r"r'\' + ", r"'\'' + ", r"'''a\'''' + ", "'//' + ", r"br'\' == b'' || "]


@pytest.mark.parametrize("prefix", HIDING_PREFIXES)
def test_strings_cannot_hide_loops_from_the_meter(prefix: str) -> None:
    # The scanner must end strings exactly where CEL does, or code would escape metering:
    # a raw string has no escapes (r'\' is complete), an ordinary one does ('\'' is a quote).
    source = prefix + "string(items.all(a, items.all(b, items.all(c, a == b))))"
    assert "comprehensions nested deeper" in refused(source).message
    if "||" not in prefix:
        assert run(prefix + "string([1, 2].map(x, x * 2).size())") == run(prefix + "'2'")


# --- reusing converted variables (contract/cel_binding.py) -----------------------------


def test_fuel_is_the_same_whether_the_variables_were_converted_before_or_not() -> None:
    text = "x" * 640  # 1 node + 10 per 64 characters = 11 units, charged on every read
    twice = compile_expression("size(text) + size(text)", NAMES)
    other = compile_expression("size(text) > 0", NAMES)
    variables = {"text": text}
    for _ in range(2):  # cold, then warm: the conversion is reused, the charge is not
        assert evaluate(twice, variables, Limits(fuel=22)) == 1280
        assert evaluate(twice, variables, Limits(fuel=21)) == EvaluationError(
            "", "evaluation budget of 21 units exceeded", "budget")
        assert evaluate(other, variables, Limits(fuel=11)) is True


def test_each_evaluation_sees_the_values_of_its_own_mapping() -> None:
    compiled = compile_expression("counts.turns + size(items)", NAMES)
    first = {"counts": {"turns": 1}, "items": [1]}
    assert evaluate(compiled, first) == 2
    assert evaluate(compiled, {"counts": {"turns": 5}, "items": [1, 2]}) == 7
    first["counts"] = {"turns": 10}  # a value replaced in a mapping seen before
    assert evaluate(compiled, first) == 11
    assert run("items == null", items=None) is True  # bound before, null now
    assert run("size(items)", items=[1, 2, 3]) == 3


def test_a_value_that_cannot_be_converted_is_an_error_and_leaves_nothing_stale() -> None:
    compiled = compile_expression("size(items)", NAMES)
    assert evaluate(compiled, {"items": [1, 2]}) == 2
    broken = {"items": [object()], "text": "abc"}
    assert evaluate(compile_expression("size(text)", NAMES), broken) == 3  # does not read items
    assert isinstance(evaluate(compiled, broken), EvaluationError)
    assert isinstance(evaluate(compiled, broken), EvaluationError)  # not the [1, 2] of before
    assert evaluate(compile_expression("items == null", NAMES), {"text": "t"}) is True


def test_reads_past_the_budget_stop_the_work_even_without_loops() -> None:
    # Nothing but reads: the resolver cannot abort, so it hands back a stand-in that the
    # next `+` refuses; the evaluation ends at once and the result is the budget error.
    # Carried on, the 800 concatenations would copy ~19 GB; stopped, a few MB.
    source = "size(" + "+".join(["t"] * 800) + ")"
    started = time.monotonic()
    result = evaluate(compile_expression(source, ["t"]), {"t": "y" * 60_000}, Limits(fuel=20_000))
    assert time.monotonic() - started < 1.0
    assert isinstance(result, EvaluationError) and result.kind == "budget"


def test_compiling_records_the_functions_and_loops_to_register() -> None:
    plain = compile_expression("counts.turns > 0 && text.contains('a')", NAMES)
    assert (plain.functions, plain.metered_loops) == (frozenset(), False)
    rich = compile_expression("math.greatest([1]) + items.map(x, x).size() + sum([1])", NAMES)
    assert rich.functions == {"math.greatest", "sum"}
    assert rich.metered_loops
