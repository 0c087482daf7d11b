"""Loop-free expressions whose reads cannot exceed the fuel run without the meter
(contract/cel_unmetered.py), and give exactly what the metered way gives."""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Any

import pytest

from contract.cel_binding import Binding, value_units
from contract.cel_unmetered import unmetered_run
from contract.rubric import CompiledExpression, EvaluationError, Limits, compile_expression, evaluate

NAMES = ("items", "text", "feedback", "outcome", "counts")

LOOP_FREE = [
    "counts.turns > 0 ? 1.0 : 0.0",
    "counts.turns > 0 && counts.turns < 5 || counts.turns == 9",
    "has(counts.turns) ? counts.turns + counts.turns : counts.other",
    "size(text) + size(text) + size(items)",
    "text.contains('help') && text.startsWith('p') ? size(items) : 0",
    "items[0] + items[1] + items[size(items) - 1]",
    "'turns' in counts && counts['turns'] > 0",
    "dyn(counts).turns + feedback.rating + int(feedback.ratings[0] * 2.0)",
    "[counts.turns, counts.turns, (text + text).size()]",
    "{'a': counts.turns, 'b': feedback}.a",
    "outcome == null ? double(counts.turns) : 0.0",
    "counts.nope > 0",
    "counts.by_type.a + counts.turns // a comment\n + counts . turns",
    "feedback.ratings[0] + feedback.rating > 1.0 ? text : 'no'",
    "has(feedback.rating) && counts.turns > 1",
    "outcome.x == 1",
]

VALUES: dict[str, Any] = {
    "counts": {"turns": 2, "other": 1, "by_type": {"a": 1, "b": 2}},
    "feedback": {"rating": 0.5, "ratings": [0.5, 1.0]},
    "text": "please help " * 20,
    "items": [1, 2, 3, 4],
    "outcome": None,
}


class CountingBinding(Binding):
    """The metered binding, counting the reads its resolver is asked for, by name."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: dict[str, int] = {}

    def _read(self, name: str) -> Any:
        self.reads[name] = self.reads.get(name, 0) + 1
        return super()._read(name)


class Plenty:
    limit = 1 << 40

    def charge(self, units: int) -> None:
        pass

    def units(self, value: Any) -> int:
        return value_units(value)

    def tick(self, site: int | None = None) -> bool:
        return True


def metered(compiled: CompiledExpression) -> CompiledExpression:
    return replace(compiled, read_sites=None)


@pytest.mark.parametrize("source", LOOP_FREE)
def test_the_resolver_reads_a_variable_at_most_once_per_place_that_reads_it(source: str) -> None:
    compiled = compile_expression(source, NAMES)
    assert compiled.read_sites is not None
    binding = CountingBinding()
    with contextlib.suppress(Exception):  # an error value is fine: the reads before it count
        compiled.program.execute(binding.context_for(compiled, VALUES, Plenty()))
    read = {name: count for name, count in binding.reads.items() if name in NAMES}
    assert read  # the resolver was asked
    assert all(count <= compiled.read_sites.get(name, 0) for name, count in read.items()), read


@pytest.mark.parametrize("source", LOOP_FREE)
def test_with_or_without_the_meter_the_value_and_the_error_are_the_same(source: str) -> None:
    compiled = compile_expression(source, NAMES)
    assert compiled.read_sites is not None
    bound = sum(count * value_units(VALUES[name]) for name, count in compiled.read_sites.items()
                if VALUES[name] is not None)
    # Around the bound: unmetered (2 * bound <= fuel), metered and passing, metered and stopped.
    for fuel in (2 * bound + 1, 2 * bound, 2 * bound - 1, bound, bound - 1, 1):
        limits = Limits(fuel=fuel)
        assert evaluate(compiled, VALUES, limits) == evaluate(metered(compiled), VALUES, limits), fuel


def test_only_loop_free_expressions_without_extension_functions_can_go_unmetered() -> None:
    assert compile_expression("size(items) + size(items)", NAMES).read_sites == {"items": 2}
    assert compile_expression("items.all(x, x > 0)", NAMES).read_sites is None
    assert compile_expression("math.greatest(items) > 0", NAMES).read_sites is None
    assert compile_expression("1.0", NAMES).read_sites == {}


def test_a_value_that_cannot_be_converted_fails_as_it_does_metered() -> None:
    compiled = compile_expression("size(items) > 0", NAMES)
    broken = {"items": [object()]}
    result = evaluate(compiled, broken)
    assert isinstance(result, EvaluationError)
    assert result == evaluate(metered(compiled), broken)
    assert evaluate(compiled, {"items": [1]}) is True


def test_values_too_big_for_the_bound_are_metered_and_stop_with_the_budget_error() -> None:
    compiled = compile_expression("size(text) + size(text)", NAMES)
    text = "x" * 640  # 11 units a read
    assert evaluate(compiled, {"text": text}, Limits(fuel=44)) == 1280  # unmetered
    assert evaluate(compiled, {"text": text}, Limits(fuel=22)) == 1280  # metered, just fits
    assert evaluate(compiled, {"text": text}, Limits(fuel=21)) == EvaluationError(
        "", "evaluation budget of 21 units exceeded", "budget")


def test_field_reads_of_maps_read_only_by_field_become_variables_of_their_own() -> None:
    compiled = compile_expression("counts.turns + counts.turns + counts.other > size(text) "
                                  "&& has(feedback.rating) && feedback.rating > 0.0", NAMES)
    assert compiled.flat is not None
    assert dict(compiled.flat.fields) == {"__f0": ("counts", "turns"), "__f1": ("counts", "other")}
    assert compiled.flat.whole == {"text", "feedback"}  # has() needs the selection itself
    run = unmetered_run(compiled, {"counts": {"turns": 1, "other": 2}, "text": "", "feedback": {}}, 1000)
    assert run is not None and run[0] is compiled.flat.program
    assert run[1] == {"__f0": 1, "__f1": 2, "text": "", "feedback": {}}
    assert compile_expression("size(counts) + counts.turns", NAMES).flat is None
    assert compile_expression("items.all(x, counts.turns > x)", NAMES).flat is None  # metered


@pytest.mark.parametrize("counts", [{"turns": 2, "other": 3}, {"turns": 2}, None, [1],
                                    {"turns": "x", "other": 1}])
def test_flattened_or_not_the_value_and_the_error_are_the_same(counts: object) -> None:
    compiled = compile_expression("counts.turns + counts.other", NAMES)
    assert compiled.flat is not None
    variables = {"counts": counts}
    assert evaluate(compiled, variables) == evaluate(metered(compiled), variables)
    assert evaluate(compiled, variables) == evaluate(replace(compiled, flat=None), variables)


def _units(value: object) -> int:
    """value_units written plainly: a node each, a unit per 64 characters, recursively."""
    if isinstance(value, str | bytes):
        return 1 + len(value) // 64
    if isinstance(value, dict):
        return 1 + len(value) + sum(_units(v) for v in value.values())
    if isinstance(value, list | tuple):
        return 1 + sum(_units(v) for v in value)
    return 1


def test_value_units_counts_every_node_of_random_values() -> None:
    import random

    rng = random.Random(7)

    def made(depth: int = 0) -> object:
        pick = rng.random()
        if depth > 2 or pick < 0.6:
            return rng.choice([1, 2.5, True, None, "x" * rng.randint(0, 200), b"yy", -0.0])
        size = rng.choice([0, 1, 3, 8, 70 if depth == 0 else 8])  # (over 64: walked another way)
        if pick < 0.8:
            return {str(i): made(depth + 1) for i in range(size)}
        return [made(depth + 1) for _ in range(size)]

    for _ in range(300):
        value = made()
        assert value_units(value) == _units(value)
