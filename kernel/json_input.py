"""Strict JSON input: a client's JSON is taken only when what is stored is what was sent.

``json.loads`` accepts NaN and Infinity, turns 1e400 into inf (both later served as
null, so a payload no longer matches its digest), keeps the last of duplicate keys
(the digest covers a value the client never wrote), and decodes "\\ud800" into a lone
surrogate and "\\u0000" into NUL, which neither UTF-8 nor PostgreSQL can store.
``parse_strict`` refuses all of these and names the field; ``check_json_value`` also
bounds depth, keys per object and string length, iteratively (no recursion limit).
Pure: no I/O.
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass
from typing import Any

from kernel.json_fast import NOT_PROVEN, parse_proven


class JsonRejected(ValueError):
    """A JSON value refused; ``field`` names where (``body`` for the document as a whole).

    ``whole_body`` marks problems of the request body itself (not UTF-8, too deep to
    parse) rather than of one field's value: the API answers those with 400, not 422.
    """

    def __init__(self, field: str, message: str, whole_body: bool = False) -> None:
        super().__init__(f"{field}: {message}")
        self.field, self.message, self.whole_body = field, message, whole_body


@dataclass(frozen=True)
class JsonLimits:
    max_depth: int = 64  # nesting of objects and arrays; a scalar adds none
    max_object_keys: int = 1000  # keys of one object
    max_string_chars: int = 131_072  # characters of one string (keys included)


UNBOUNDED = JsonLimits(sys.maxsize, sys.maxsize, sys.maxsize)

# Any \u escape of a surrogate (paired or not) or of NUL: then, and only then, the parsed
# value is walked to find the offending field, so well-formed bodies cost no extra pass.
_SUSPECT_ESCAPE = re.compile(r"\\u(?:[dD][89a-fA-F][0-9a-fA-F]{2}|0000)")


class _DuplicateKeys(dict[str, Any]):
    """An object that repeated a key; the walk reports it with its path."""

    duplicates: list[str]


def parse_strict(raw: bytes | str) -> Any:
    """Parse a request body; raises ``json.JSONDecodeError`` for broken syntax and
    ``JsonRejected`` for everything that parses but must not be stored."""
    if type(raw) is bytes:
        value = parse_proven(raw)  # orjson, where it provably agrees (kernel/json_fast.py)
        if value is not NOT_PROVEN:
            return value
    text = _decode(raw) if isinstance(raw, bytes) else raw
    suspect = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal suspect
        out = dict(items)
        if len(out) == len(items):
            return out
        marked = _DuplicateKeys(out)
        marked.duplicates = []
        seen: set[str] = set()
        for key, _value in items:
            if key in seen:
                marked.duplicates.append(key)
            seen.add(key)
        suspect = True
        return marked

    def number(literal: str) -> float:
        nonlocal suspect
        value = float(literal)
        suspect = suspect or not math.isfinite(value)
        return value

    def constant(name: str) -> float:
        nonlocal suspect
        suspect = True
        return float(name.replace("Infinity", "inf"))

    try:
        value = json.loads(text, object_pairs_hook=pairs, parse_float=number, parse_constant=constant)
    except RecursionError:
        raise JsonRejected("body", "the JSON nests deeper than this server parses; "
                           "flatten the document", whole_body=True) from None
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError):
            raise
        # int() refuses numbers of more than sys.get_int_max_str_digits() digits
        raise JsonRejected("body", f"a number is too long: {exc}", whole_body=True) from None
    if suspect or _SUSPECT_ESCAPE.search(text):
        check_json_value(value, UNBOUNDED)
    return value


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonRejected("body", f"the body is not UTF-8 (invalid byte at offset {exc.start}); "
                           "send JSON encoded as UTF-8", whole_body=True) from None


def check_json_value(value: Any, limits: JsonLimits, root: str = "") -> None:
    """Raise ``JsonRejected`` naming the first field (in document order) that breaks a
    limit or cannot be stored faithfully. Iterative, so any depth is safe to check."""
    if _within(value, limits):
        return
    _name_the_problem(value, limits, root)


def _within(value: Any, limits: JsonLimits) -> bool:
    """The fast pass every accepted payload takes: is anything wrong? (no paths built)"""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if depth >= limits.max_depth:
            return False
        if type(node) is dict:  # exactly: the subclass _DuplicateKeys is not within
            if len(node) > limits.max_object_keys:
                return False
            items: Any = node.items()
        elif type(node) is list:
            items = enumerate(node)
        else:
            return False
        for key, child in items:
            if key.__class__ is str and not _text_ok(key, limits):
                return False
            kind = child.__class__
            if kind is str:
                if not _text_ok(child, limits):
                    return False
            elif kind is dict or kind is list or kind is _DuplicateKeys:
                stack.append((child, depth + 1))
            elif kind is float and not math.isfinite(child):
                return False
    return True


def _text_ok(text: str, limits: JsonLimits) -> bool:
    if len(text) > limits.max_string_chars or "\x00" in text:
        return False
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _name_the_problem(value: Any, limits: JsonLimits, root: str) -> None:
    stack: list[tuple[Any, str, int]] = [(value, root, 0)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, dict):
            _check_container(path, depth, limits)
            if len(node) > limits.max_object_keys:
                raise JsonRejected(path or "body", f"has {len(node)} keys, more than the "
                                   f"{limits.max_object_keys} allowed in one object")
            if isinstance(node, _DuplicateKeys):
                key = node.duplicates[0]
                raise JsonRejected(join(path, key), f"the key '{key}' appears more than once "
                                   "in one object; send each key once")
            for key in node:
                _check_text(key, join(path, key), limits)
            stack.extend((child, join(path, key), depth + 1) for key, child in reversed(node.items()))
        elif isinstance(node, list):
            _check_container(path, depth, limits)
            stack.extend((node[i], f"{path}[{i}]", depth + 1) for i in range(len(node) - 1, -1, -1))
        elif isinstance(node, str):
            _check_text(node, path, limits)
        elif isinstance(node, float) and not math.isfinite(node):
            raise JsonRejected(path or "body", "is not a finite number (NaN, Infinity and "
                               "numbers beyond ±1.8e308 have no exact JSON form)")


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _check_container(path: str, depth: int, limits: JsonLimits) -> None:
    if depth >= limits.max_depth:
        raise JsonRejected(path or "body", f"nests deeper than {limits.max_depth} levels")


def _check_text(text: str, path: str, limits: JsonLimits) -> None:
    if len(text) > limits.max_string_chars:
        raise JsonRejected(path or "body", f"has {len(text)} characters, more than the "
                           f"{limits.max_string_chars} allowed in one string")
    if "\x00" in text:
        raise JsonRejected(path or "body", "contains a NUL character (U+0000), which cannot be stored")
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise JsonRejected(path or "body", "contains a lone surrogate (an unpaired \\ud800-"
                           "\\udfff escape), which is not a Unicode character") from None
