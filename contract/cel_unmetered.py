"""Expressions that cannot run out of fuel, evaluated without the meter.

Without comprehensions and extension functions, the only fuel an expression burns is what
reading its free variables charges (`cel_binding`: the value's size on every read), and
each place that reads a variable is evaluated at most once. So the fuel of one evaluation
is at most the sum, over the places that read a variable, of that variable's size: the
bound is known before running. When twice that bound fits in the budget (a margin against
a read the count could miss), no read can stop the evaluation, and the meter would only
have counted; the result is the same without it. Then the expression runs on a plain
mapping of the variables it reads: no resolver (a Python call per read), no functions, and
nothing else to convert. (The binding converts every variable of a context again whenever
one of them changed, so a context shared by expressions converts what none of them reads.)
Any other expression, or the same one on a subject whose values are too big for the bound
to fit, takes the metered way and stops with the same error as ever; so does any error
here, so that every error is reported as the metered way reports it.

The deadline is only checked when the meter runs, so these evaluations do not check it: a
loop-free expression over values whose sizes fit the budget finishes in well under the
deadline (converting them is the longest part: microseconds per node).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import cel

from contract.cel_binding import project, value_units
from contract.cel_flat import Flat

_NUMBERS = frozenset({int, float, bool})


class Bounded(Protocol):
    @property
    def program(self) -> cel.Program: ...

    @property
    def flat(self) -> Flat | None: ...  # the program with field reads as variables (cel_flat)

    @property
    def variables(self) -> frozenset[str]: ...

    @property
    def projections(self) -> Mapping[str, frozenset[str]]: ...

    @property
    def read_sites(self) -> Mapping[str, int] | None: ...  # places reading each variable


NOT_RUN = object()  # what `run` gives when the expression must be metered


def run(expression: Bounded, variables: Mapping[str, Any], fuel: int) -> Any:
    """The value of ``expression`` run without the meter, or NOT_RUN when it must be
    metered: its reads could cost too much, or it failed (the metered way reports it)."""
    try:  # (not contextlib.suppress: a context manager's calls, twice per subject)
        found = unmetered_run(expression, variables, fuel)
        if found is not None:
            return found[0].execute(found[1])
    except Exception:  # noqa: S110 (the metered way runs it and reports the error)
        pass
    return NOT_RUN


def summed_sites(sites: Iterable[Mapping[str, int] | None]) -> dict[str, int] | None:
    """The read sites of expressions run as one program; None if one has no bound."""
    summed: dict[str, int] = {}
    for one in sites:
        if one is None:
            return None
        for name, count in one.items():
            summed[name] = summed.get(name, 0) + count
    return summed


def unmetered_run(expression: Bounded, variables: Mapping[str, Any],
                  fuel: int) -> tuple[cel.Program, dict[str, Any]] | None:
    """The program to run ``expression`` as without the meter, and what to run it on: the
    variables it reads (a map read only by field, with those fields, or those fields as
    variables of their own); None when its reads of these values could cost more than half
    of ``fuel`` (then it must be metered)."""
    sites = expression.read_sites
    if sites is None:
        return None
    total = 0
    for name, count in sites.items():
        value = variables.get(name)
        if type(value) is str:  # what value_units gives, without the call
            total += count * (1 + len(value) // 64)
        elif type(value) in _NUMBERS:
            total += count
        elif value is not None:  # a null read is not charged
            total += count * value_units(value, cap=fuel)
    if 2 * total > fuel:
        return None
    shapes, flat = expression.projections, expression.flat
    if flat is not None:
        values = flat.values(variables)
        if values is not None:
            for name in flat.whole:
                values[name] = project(variables.get(name), shapes.get(name))
            return flat.program, values
    return expression.program, {name: project(variables.get(name), shapes.get(name))
                                for name in expression.variables}
