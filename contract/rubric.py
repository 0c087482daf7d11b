"""The rubric expression language: CEL, compiled with limits and evaluated under a budget.

Why these bounds, in this order:

- Length and bracket nesting are refused before compiling (`cel_scan`), so a hostile
  draft costs a linear scan, not parser effort.
- Comprehension nesting is capped: comprehensions are CEL's only loops, and cel-rust's
  `map`/`filter` are quadratic in the list length, so nesting multiplies quickly.
- At run time every comprehension iteration, every variable read and every extension
  function call goes through Python, and each charges *fuel*. Fuel is deterministic (the
  same subject costs the same on every worker), so an expression that is too expensive for
  a subject fails the same way everywhere.
- The same callbacks check a wall-clock deadline. It is only a backstop: the Rust evaluator
  holds the GIL, so no thread or signal can stop it from outside; the callbacks are the only
  points where Python regains control.
- An evaluation whose fuel is bounded before it runs, with room to spare, cannot be
  stopped, so it runs without the callbacks (`cel_unmetered`).

Errors are values: `evaluate` returns an `EvaluationError` instead of raising.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import cel

from contract import cel_binding, cel_flat, cel_functions, cel_scan, cel_unmetered
from contract.cel_binding import MeterStop, value_units


@dataclass(frozen=True)
class Limits:
    max_chars: int = 4096
    max_depth: int = 32
    max_comprehension_depth: int = 2
    fuel: int = 150_000  # ~ nodes converted/visited; a 500-event `events` read is ~10k
    deadline_s: float = 1.0


DEFAULT_LIMITS = Limits()


class ExpressionError(Exception):
    """An expression refused at compile time, with a 1-based position inside it."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(f"{line}:{column}: {message}")
        self.message = message
        self.line = line
        self.column = column


@dataclass(frozen=True)
class EvaluationError:
    """Why one expression could not produce a value for one subject."""

    item: str  # "criterion:<id>", "gate:<id>", "eligibility" or "applies_to"
    message: str
    kind: str = "runtime"  # runtime | type | range | budget | deadline

    def to_json(self) -> dict[str, str]:
        return {"item": self.item, "message": self.message, "kind": self.kind}


@dataclass(frozen=True, eq=False)
class CompiledExpression:
    source: str
    program: cel.Program  # compiled from the metered rewrite, not from `source`
    variables: frozenset[str]  # free input variables the expression reads
    functions: frozenset[str] = frozenset()  # extension functions it calls (metered)
    metered_loops: bool = False  # it has comprehensions, so it calls the loop meter
    rewritten: str = ""  # the metered rewrite `program` was compiled from
    # Per variable read, the fields it is read through (None: the value itself); and the
    # fields the context may bind of each map variable instead of the whole (cel_binding).
    field_reads: Mapping[str, frozenset[str] | None] = field(default_factory=dict)
    projections: Mapping[str, frozenset[str]] = field(default_factory=dict)
    read_sites: Mapping[str, int] | None = None  # places reading each; None: loops, functions
    flat: cel_flat.Flat | None = None  # for unmetered runs: field reads as variables


_CEL_POSITION = re.compile(r"<input>:(\d+):(\d+):\s*([^\n]*)")


def compile_expression(
    source: str, known_variables: Iterable[str], limits: Limits = DEFAULT_LIMITS
) -> CompiledExpression:
    """Check limits and names, then compile. Raises `ExpressionError` with a position."""
    if not source.strip():
        raise ExpressionError("expression is empty")
    if len(source) > limits.max_chars:
        raise ExpressionError(f"expression longer than {limits.max_chars} characters")
    try:
        scanned = cel_scan.scan(
            source,
            max_depth=limits.max_depth,
            max_macro_depth=limits.max_comprehension_depth,
            namespaces=cel_functions.NAMESPACES,
        )
    except cel_scan.ScanError as exc:
        raise ExpressionError(exc.message, *cel_scan.line_column(source, exc.offset)) from None
    _compile_cel(source)  # syntax errors, positioned in the author's text
    variables = _check_names(source, scanned, frozenset(known_variables))
    functions = frozenset(c.name for c in scanned.calls) & cel_functions.EXTENSION_FUNCTIONS.keys()
    bounded = not functions and scanned.loops == 0
    return CompiledExpression(source, _compile_cel(scanned.rewritten), variables,
                              frozenset(functions), scanned.loops > 0, scanned.rewritten,
                              cel_scan.field_reads(scanned, variables),
                              read_sites=cel_scan.read_sites(scanned, variables) if bounded else None,
                              flat=cel_flat.flatten(scanned.rewritten, variables) if bounded else None)


def compile_group(expressions: Sequence[CompiledExpression]) -> CompiledExpression:
    """One program whose value is the list of the expressions' values, in order; for when
    that may stand in for evaluating them one by one, see contract/evaluate.py.

    Each element is the expression's metered rewrite in parentheses, on lines of its own
    (a trailing comment in one must not swallow the bracket that closes it).
    """
    body = ",".join(f"(\n{e.rewritten}\n)" for e in expressions)
    variables = frozenset().union(*(e.variables for e in expressions))
    sites = cel_unmetered.summed_sites([e.read_sites for e in expressions])
    return CompiledExpression(
        f"[{', '.join(e.source for e in expressions)}]", _compile_cel(f"[{body}]"), variables,
        frozenset().union(*(e.functions for e in expressions)),
        any(e.metered_loops for e in expressions), f"[{body}]", merged_field_reads(expressions),
        read_sites=sites, flat=cel_flat.flatten(f"[{body}]", variables) if sites is not None else None)


def merged_field_reads(expressions: Iterable[CompiledExpression]) -> dict[str, frozenset[str] | None]:
    """The fields each variable is read through by any of ``expressions`` (None: by one
    of them as a whole)."""
    merged: dict[str, frozenset[str] | None] = {}
    for expression in expressions:
        for name, fields in expression.field_reads.items():
            known = merged.get(name, frozenset())
            merged[name] = None if fields is None or known is None else known | fields
    return merged


def _compile_cel(text: str) -> cel.Program:
    try:
        return cel.compile(text)
    except Exception as exc:  # the binding raises ValueError, but be sure nothing escapes
        match = _CEL_POSITION.search(str(exc))
        if match:
            raise ExpressionError(match[3], int(match[1]), int(match[2])) from None
        raise ExpressionError(str(exc).splitlines()[0]) from None


def _check_names(source: str, scanned: cel_scan.Scan, known: frozenset[str]) -> frozenset[str]:
    for call in scanned.calls:
        if not cel_functions.is_known_function(call.name):
            line, column = cel_scan.line_column(source, call.offset)
            raise ExpressionError(f"unknown function {call.name!r}", line, column)
    free = set(scanned.identifiers) - scanned.bound_names - _LITERAL_NAMES
    for name in sorted(free, key=lambda n: scanned.identifiers[n]):
        if name not in known:
            line, column = cel_scan.line_column(source, scanned.identifiers[name])
            hint = ", ".join(sorted(known))
            raise ExpressionError(f"unknown variable {name!r} (known: {hint})", line, column)
    return frozenset(free & known)


# Type names usable as values (`type(x) == int`) and the literals the tokenizer sees as names.
_LITERAL_NAMES = frozenset(
    {"true", "false", "null", "int", "uint", "double", "bool", "string", "bytes", "list", "map"}
    | {"null_type", "type", "in"}
)


class _QuietStops(logging.Filter):
    # The binding logs a warning whenever a Python callback raises. Deliberate stops are
    # reported as EvaluationError values, so a line per stopped evaluation is only noise.
    def filter(self, record: logging.LogRecord) -> bool:
        return MeterStop.__name__ not in record.getMessage()


logging.getLogger("cel").addFilter(_QuietStops())


class _Budget:
    """Fuel and deadline for one expression evaluation; every callback charges here."""

    __slots__ = ("limit", "used", "deadline", "stopped", "sites")

    def __init__(self, limits: Limits) -> None:
        self.limit = limits.fuel
        self.used = 0
        self.deadline = time.monotonic() + limits.deadline_s
        self.stopped: EvaluationError | None = None
        self.sites: dict[int, int] | None = None  # made on the first map/filter step

    def charge(self, units: int) -> None:
        if self.stopped is not None:
            raise MeterStop()
        self.used += units
        if self.used > self.limit:
            self._stop("budget", f"evaluation budget of {self.limit} units exceeded")
        if time.monotonic() > self.deadline:
            self._stop("deadline", "evaluation deadline exceeded")

    def _stop(self, kind: str, message: str) -> None:
        self.stopped = EvaluationError("", message, kind)
        raise MeterStop()

    def units(self, value: Any) -> int:
        return value_units(value, cap=self.limit - self.used + 1)

    def tick(self, site: int | None = None) -> bool:
        if site is None:
            self.charge(1)
            return True
        # Steps of one map/filter site are charged 1 + n/64, a quadratic total, because
        # each step copies the accumulator. Counts persist across re-entries of a nested
        # site, which overcharges inner loops; a deliberate bias towards refusing.
        if self.sites is None:
            self.sites = {}
        count = self.sites.get(site, 0)
        self.sites[site] = count + 1
        self.charge(1 + count // 64)
        return True


def evaluate(
    compiled: CompiledExpression,
    variables: Mapping[str, Any],
    limits: Limits = DEFAULT_LIMITS,
) -> Any | EvaluationError:
    """Run one expression against the input variables; errors come back as values.

    Without the meter where that cannot change the outcome (`cel_unmetered`), else in this
    thread's metered context (`cel_binding`); treat the mapping's values as immutable.
    """
    value = cel_unmetered.run(compiled, variables, limits.fuel)
    if value is not cel_unmetered.NOT_RUN:
        return value
    budget = _Budget(limits)
    binding = cel_binding.binding()
    try:
        value = compiled.program.execute(binding.context_for(compiled, variables, budget))
    except Exception as exc:  # every failure inside the evaluator becomes a recorded error
        if budget.stopped is not None:
            return budget.stopped
        return EvaluationError("", _describe(exc), _kind(exc))
    finally:
        binding.budget = None
    # A read past the budget cannot abort (the binding ignores resolver errors); it
    # returned a stand-in instead, so the value computed from it must not count.
    return budget.stopped if budget.stopped is not None else value


def _kind(exc: Exception) -> str:
    return "type" if isinstance(exc, TypeError) else "runtime"


def _describe(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if isinstance(exc, KeyError):
        return f"no such key: {text}"
    return text[:500]


def as_score(value: Any | EvaluationError, item: str) -> float | EvaluationError:
    """A criterion's value must be a finite number in [0, 1].

    Out-of-range values are errors, not clamped: a criterion that yields 3.0 is a broken
    rubric, and clamping would hide it inside plausible-looking rewards.
    """
    if type(value) is float and 0.0 <= value <= 1.0:
        return value  # the common case, decided at once (a NaN or infinity fails the range)
    if isinstance(value, EvaluationError):
        return _named(value, item)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return EvaluationError(item, f"expected a number in [0, 1], got {_type_name(value)}", "type")
    score = float(value)
    if not math.isfinite(score) or not 0.0 <= score <= 1.0:
        return EvaluationError(item, f"score {score!r} is outside [0, 1]", "range")
    return score


def as_bool(value: Any | EvaluationError, item: str) -> bool | EvaluationError:
    if isinstance(value, EvaluationError):
        return _named(value, item)
    if not isinstance(value, bool):
        return EvaluationError(item, f"expected a bool, got {_type_name(value)}", "type")
    return value


def _named(error: EvaluationError, item: str) -> EvaluationError:
    return EvaluationError(item, error.message, error.kind)


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__
