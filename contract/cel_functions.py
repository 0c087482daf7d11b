"""The functions a rubric expression may call, and how each call is metered.

Native functions run inside the Rust evaluator and cost little per call; the extension
functions come from `cel.stdlib` (pure Python) and are wrapped so that every call charges
the size of its arguments and of its result to the evaluation's budget. Functions that
can amplify a small input into a huge output (`replace`, `lists.range`) or that are of no
use to a rubric (`base64`, bit operations) are left out on purpose.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from cel import stdlib

# Built into cel-rust: usable as global or method calls. Macros (`all`, `map`, ...) are
# expanded by the parser and are metered by the rewrite in `cel_scan`, not listed here.
NATIVE_FUNCTIONS = frozenset(
    {
        "has",
        "size",
        "contains",
        "startsWith",
        "endsWith",
        "matches",
        "string",
        "bytes",
        "double",
        "int",
        "uint",
        "timestamp",
        "duration",
        "dyn",
        "type",
        "getFullYear",
        "getMonth",
        "getDayOfYear",
        "getDayOfMonth",
        "getDate",
        "getDayOfWeek",
        "getHours",
        "getMinutes",
        "getSeconds",
        "getMilliseconds",
    }
)

EXTENSION_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": stdlib.min_,
    "max": stdlib.max_,
    "sum": stdlib.sum_,
    "bool": stdlib.bool_,
    "charAt": stdlib.char_at,
    "indexOf": stdlib.index_of,
    "lastIndexOf": stdlib.last_index_of,
    "substring": stdlib.substring,
    "split": stdlib.split,
    "join": stdlib.join,
    "lowerAscii": stdlib.lower_ascii,
    "upperAscii": stdlib.upper_ascii,
    "trim": stdlib.trim,
    "reverse": stdlib.reverse,
    "distinct": stdlib.distinct,
    "flatten": stdlib.flatten,
    "slice": stdlib.slice_,
    "sort": stdlib.sort,
    "math.greatest": stdlib.math_greatest,
    "math.least": stdlib.math_least,
    "math.abs": stdlib.math_abs,
    "math.sign": stdlib.math_sign,
    "math.ceil": stdlib.math_ceil,
    "math.floor": stdlib.math_floor,
    "math.round": stdlib.math_round,
    "math.trunc": stdlib.math_trunc,
    "math.isNaN": stdlib.math_is_nan,
    "math.isInf": stdlib.math_is_inf,
    "math.isFinite": stdlib.math_is_finite,
    "math.sqrt": stdlib.math_sqrt,
    "sets.contains": stdlib.sets_contains,
    "sets.equivalent": stdlib.sets_equivalent,
    "sets.intersects": stdlib.sets_intersects,
}

# Quadratic in their list arguments (Python `in` on lists): charged by the product.
_QUADRATIC = frozenset({"distinct", "sets.contains", "sets.equivalent", "sets.intersects"})

NAMESPACES = frozenset({"math", "sets"})
METHOD_ONLY_NATIVE = frozenset(name for name in NATIVE_FUNCTIONS if name.startswith("get"))


class Meter(Protocol):
    def charge(self, units: int) -> None: ...

    def units(self, value: Any) -> int: ...


def is_known_function(name: str) -> bool:
    return name in NATIVE_FUNCTIONS or name in EXTENSION_FUNCTIONS


def metered_functions(meter: Meter) -> dict[str, Callable[..., Any]]:
    """The extension functions, each wrapped to charge `meter` before and after it runs."""
    return {name: _metered(name, fn, meter) for name, fn in EXTENSION_FUNCTIONS.items()}


def _metered(name: str, fn: Callable[..., Any], meter: Meter) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        sizes = [meter.units(arg) for arg in args]
        cost = sizes[0] * max(sizes[1:] or sizes) if name in _QUADRATIC and sizes else sum(sizes)
        meter.charge(cost + 1)
        result = fn(*args)
        meter.charge(meter.units(result))
        return result

    call.__name__ = fn.__name__
    return call


def function_names() -> list[str]:
    """Every callable name, for the authoring documentation and error messages."""
    return sorted(NATIVE_FUNCTIONS | set(EXTENSION_FUNCTIONS))
