"""JSON text of any stored value, however deep: the served form never fails to encode.

The log is append-only, so a value stored before today's input limits (a payload nested
hundreds deep, a NaN) is there forever; every read of it must still answer. The C
encoder is tried first (fast, but bounded by the interpreter's recursion limit); the
fallback walks an explicit stack. Non-finite numbers become null and lone surrogates
are \\u-escaped, so the text is always valid JSON in valid UTF-8. Pure: no I/O.
"""

from __future__ import annotations

import json
import math
from typing import Any

_SEPARATORS = (",", ":")


def json_bytes(value: Any) -> bytes:
    """Compact UTF-8 JSON of ``value`` (dicts, lists, str, int, float, bool, None)."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False,
                          separators=_SEPARATORS).encode("utf-8")
    except (RecursionError, ValueError, UnicodeEncodeError):
        return "".join(_chunks(value)).encode("utf-8")


def _chunks(value: Any) -> list[str]:
    """The JSON text as pieces, built without recursion (ASCII-escaped: always encodable)."""
    out: list[str] = []
    # A work item is either a value to encode or a literal piece of text to emit.
    stack: list[tuple[bool, Any]] = [(False, value)]
    while stack:
        literal, item = stack.pop()
        if literal:
            out.append(item)
        elif isinstance(item, dict):
            stack.append((True, "}"))
            entries = list(item.items())
            for i in range(len(entries) - 1, -1, -1):
                key, child = entries[i]
                stack.append((False, child))
                stack.append((True, ("," if i else "") + json.dumps(str(key)) + ":"))
            stack.append((True, "{"))
        elif isinstance(item, list | tuple):
            stack.append((True, "]"))
            for i in range(len(item) - 1, -1, -1):
                stack.append((False, item[i]))
                if i:
                    stack.append((True, ","))
            stack.append((True, "["))
        else:
            out.append(_scalar(item))
    return out


def _scalar(item: Any) -> str:
    if isinstance(item, float) and not math.isfinite(item):
        return "null"
    return json.dumps(item)
