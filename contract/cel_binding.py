"""Where a rubric expression's variables and functions live while it runs: one CEL context
per thread, reused by every evaluation on that thread.

Converting a Python value into CEL is the expensive part of an evaluation (1-2.5 µs per
dict entry in the binding), and a contract's expressions mostly read the same few
variables. So the context keeps each variable converted for as long as the value object
under that name stays the same: the criteria, gates and eligibility of one subject
(eligibility gets a copy of the input plus its result, with the same value objects)
convert `counts` once, not once per read or per expression. When a new mapping arrives,
every name seen so far moves to its new value at once, so the context is rebuilt once
per subject rather than once per expression. Values must not be mutated in place between
evaluations (`build_input` builds fresh ones per subject); the context holds the latest
value of each name, at most one per variable name and thread.

A map variable that every expression of a contract reads only by field (`counts.tool_calls`)
is converted with just those fields (`projections`, set by contract/evaluate.py): the reads
see the same values, and fuel is still charged for the whole value.

Measured with common-expression-language 0.10: the binding converts every variable of a
context again at the first execution after any change to it (cost grows with all that is
bound, read or not), so the reuse pays only while nothing changes, e.g. across executions
on one mapping. Expressions that provably cannot run out of fuel do not come here at all
(contract/cel_unmetered.py): they run on a plain mapping of just the variables they read.

Metering is unchanged by the reuse: the resolver is still called on every read of a free
variable (CEL consults it before the converted value), and charges the value's size each
time; extension functions and the comprehension meter charge the evaluation's own budget.
Only the functions an expression calls are registered.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Protocol

import cel

from contract import cel_functions, cel_scan

# What a read returns once the budget is spent. The resolver cannot abort an evaluation
# (the binding logs and ignores its exceptions), so it hands back a tiny value that most
# operators refuse: the rest of a doomed evaluation is cheap, and its result is discarded.
SPENT = timedelta(0)
_UNBOUND = object()


class Budget(Protocol):
    @property
    def limit(self) -> int: ...

    def charge(self, units: int) -> None: ...

    def units(self, value: Any) -> int: ...

    def tick(self, site: int | None = None) -> bool: ...


class MeterStop(Exception):
    """Raised by a budget to abandon the evaluation; never leaves the rubric module."""


class Bindable(Protocol):
    @property
    def variables(self) -> frozenset[str]: ...  # free input variables the expression reads

    @property
    def functions(self) -> frozenset[str]: ...  # extension functions it calls

    @property
    def metered_loops(self) -> bool: ...  # it calls the comprehension meter

    @property
    def projections(self) -> Mapping[str, frozenset[str]]: ...  # map variables read by field


class Binding:
    """One thread's context: every variable any expression has read, bound to its value in
    the mapping evaluated last, converted when that value object changes."""

    def __init__(self) -> None:
        self.budget: Budget | None = None
        self._metered = cel_functions.metered_functions(self)
        self._context = cel.Context()
        self._context.set_variable_resolver(self._read)
        self._variables: Mapping[str, Any] | None = None
        self._values: dict[str, Any] = {}  # name -> the value object converted into the context
        self._shapes: dict[str, frozenset[str] | None] = {}  # name -> the fields converted (None: all)
        self._units: dict[str, int] = {}  # name -> value_units of that value, capped at _cap
        self._cap = 0
        self._functions: set[str] = set()

    def context_for(self, expression: Bindable, variables: Mapping[str, Any], budget: Budget) -> cel.Context:
        """The context to execute ``expression`` in, charging ``budget``."""
        shapes = expression.projections
        if variables is not self._variables:
            # A new input (the next subject, or the eligibility variables): move every name
            # bound so far at once, so the context is rebuilt once, not once per expression.
            self._variables = variables
            for name in list(self._values):
                value = variables.get(name)
                if value is not None:  # (a null is bound below, if this expression reads it)
                    with contextlib.suppress(Exception):  # reported by the expression reading it
                        self._bind(name, value, shapes.get(name, self._shapes.get(name)))
        values, bound_shapes = self._values, self._shapes
        for name in expression.variables:  # always checked: what this expression reads is current
            value, shape = variables.get(name), shapes.get(name)
            if values.get(name, _UNBOUND) is not value or not same_fields(bound_shapes.get(name), shape):
                self._bind(name, value, shape)
        if expression.functions:
            for name in expression.functions - self._functions:
                self._context.add_function(name, self._metered[name])
                self._functions.add(name)
        if expression.metered_loops and cel_scan.TICK_FUNCTION not in self._functions:
            self._context.add_function(cel_scan.TICK_FUNCTION, self.tick)
            self._functions.add(cel_scan.TICK_FUNCTION)
        if budget.limit != self._cap:
            self._units, self._cap = {}, budget.limit
        self.budget = budget
        return self._context

    def _bind(self, name: str, value: Any, shape: frozenset[str] | None = None) -> None:
        if self._values.get(name, _UNBOUND) is value and same_fields(self._shapes.get(name), shape):
            return
        self._units.pop(name, None)
        try:
            # Converted here, once per value object; of a map read only by field, only
            # those fields (converting costs per entry; the reads see the same values).
            self._context.add_variable(name, project(value, shape))
        except Exception:
            # Not convertible: the evaluation fails; the stale value must not stay readable.
            self._context.add_variable(name, None)
            self._values[name], self._shapes[name] = None, None
            raise
        self._values[name], self._shapes[name] = value, shape

    def _read(self, name: str) -> Any:
        # Called on every read, even inside loops: charging here bounds nested re-reads.
        # None means "use the converted value"; a null variable is converted too, so free.
        value = self._values.get(name)
        budget = self.budget
        if value is None or budget is None:
            return None
        units = self._units.get(name)
        if units is None:
            units = self._units[name] = value_units(value, cap=budget.limit)
        try:
            budget.charge(units)
        except MeterStop:
            return SPENT
        return None

    # The Meter protocol of cel_functions, for the extension functions registered once.
    def charge(self, units: int) -> None:
        assert self.budget is not None
        self.budget.charge(units)

    def units(self, value: Any) -> int:
        assert self.budget is not None
        return self.budget.units(value)

    def tick(self, site: int | None = None) -> bool:
        assert self.budget is not None
        return self.budget.tick(site)


def same_fields(bound: frozenset[str] | None, wanted: frozenset[str] | None) -> bool:
    # Mostly the very object the contract holds; comparing sets walks them.
    return bound is wanted or bound == wanted


def project(value: Any, fields: frozenset[str] | None) -> Any:
    if fields is None or type(value) is not dict:
        return value
    return {key: value[key] for key in fields if key in value}


class _PerThread(threading.local):
    binding: Binding | None = None


_LOCAL = _PerThread()


def binding() -> Binding:
    """This thread's binding (contexts are not thread-safe)."""
    found = _LOCAL.binding
    if found is None:
        found = _LOCAL.binding = Binding()
    return found


_SCALARS = frozenset({int, float, bool, type(None)})


def value_units(value: Any, cap: int = 1 << 62) -> int:
    """Size of a value as the evaluator pays for it: one per node, plus one per 64 chars.

    Iterative and capped, so measuring a hostile value costs no more than the budget left.
    Exact types first: the ABC checks cost more than the rest of the walk.
    """
    total, stack = 0, [value]
    while stack and total <= cap:
        item = stack.pop()
        total += 1
        kind = type(item)
        if kind is str or kind is bytes:
            total += len(item) // 64
        elif kind is dict:
            total += len(item) + _push_nodes(item.values(), len(item), stack)
        elif kind is list or kind is tuple:
            total += _push_nodes(item, len(item), stack)
        elif kind in _SCALARS:
            continue
        elif isinstance(item, str | bytes):
            total += len(item) // 64
        elif isinstance(item, Mapping):
            stack.extend(item.values())
            total += len(item)
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return total


def _push_nodes(children: Any, count: int, stack: list[Any]) -> int:
    """The units of the scalar children of a small container, counted here; the others
    pushed to be walked (all of a big one: the walk's cap check stays close)."""
    if count > 64:
        stack.extend(children)
        return 0
    units = 0
    for child in children:
        kind = type(child)
        if kind in _SCALARS:
            units += 1
        elif kind is str:
            units += 1 + len(child) // 64
        else:
            stack.append(child)
    return units
