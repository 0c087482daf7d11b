"""The fast parse (orjson) answers only where it agrees with the strict hooked parse."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.json_fast import NOT_PROVEN, SAFE_DEPTH, parse_proven
from kernel.json_input import JsonRejected, parse_strict


def strict(raw: bytes) -> Any:
    """The strict parse the old way (a str skips the fast path), or the refusal's type."""
    try:
        return parse_strict(raw.decode("utf-8"))
    except (JsonRejected, ValueError, RecursionError) as exc:
        return type(exc)


def assert_agrees(raw: bytes) -> Any:
    fast = parse_proven(raw)
    if fast is not NOT_PROVEN:
        expected = strict(raw)
        assert not isinstance(expected, type), f"the fast parse took what the strict one refuses: {raw!r}"
        assert repr(fast) == repr(expected)  # same values and same types (1 vs 1.0, key order)
    return fast


@pytest.mark.parametrize("text", [
    '{"a": 1e400}', '{"a": -1e400}', '{"a": 1' + "0" * 400 + "}", '{"a": NaN}', '{"a": -Infinity}',
    '{"a": 1, "a": 2}', '{"a": {"x": ":"}, "a": 2}', '{"a": "\\u003a", "a": 1}', '{"b": 1, "\\u0062": 2}',
    '{"a": "\\ud800"}', '{"\\udfff": 1}', '{"a": "x\\u0000"}', '{"n": 123456789012345678901234567890}',
    '{"n": 18446744073709551616}', '{"n": -9223372036854775809}', "[" * 300 + "]" * 300,
    "[" * (SAFE_DEPTH + 1) + "]" * (SAFE_DEPTH + 1),
    "", "1,2", "1],[2", "]", "[", '"a":1', "[1,]", '{"a":1,}', "01", "1.", ".5", "+1", "\ufeff{}",
    '{"a": "\\ud83d\\ude00"}', "[1]]" + "[" * 700,
])
def test_what_the_strict_parse_refuses_or_decides_by_field_is_not_proven(text: str) -> None:
    assert assert_agrees(text.encode()) is NOT_PROVEN


@pytest.mark.parametrize("text", [
    '{"events": [{"stream_id": "s", "payload": {"t": "10:00:00", "u": "a:b", "n": -0, "f": -0.0}}]}',
    '{"a" : [1, 2.5, -3e2, 1E+2, 1e-400, true, false, null, "é", "\\/\\n\\"\\\\", "\x7f"]}',
    '{"n": 123456789012345678, "m": -123456789012345678, "f": 1.7976931348623157e308}',
    "[" * 200 + "]" * 200, " {} \n",
])
def test_plain_bodies_are_proven_and_parse_as_before(text: str) -> None:
    assert assert_agrees(text.encode()) is not NOT_PROVEN


def test_a_large_batch_is_proven() -> None:
    body = json.dumps({"events": [{"stream_id": f"s{i}", "type": "t", "payload": {"text": "a: b", "n": i},
                                   "metadata": {"actor": "u"}} for i in range(500)]}).encode()
    assert assert_agrees(body) == json.loads(body)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_encoded_values_parse_as_before(value: Any) -> None:
    assert_agrees(json.dumps(value, ensure_ascii=False).encode())
    assert_agrees(json.dumps(value).encode())


TOKENS = ['{', '}', '[', ']', ',', ':', '"a"', '"b"', '":"', '"\\u003a"', '1', '-0', '1e400', '1.5',
          '12345678901234567890', 'true', 'null', 'NaN', ' ', '"\\u0000"', '"\\ud800"']


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=24))
def test_token_soup_is_never_taken_where_the_strict_parse_differs(tokens: list[str]) -> None:
    assert_agrees("".join(tokens).encode())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", ":"]), json_values), max_size=6))
def test_objects_with_repeated_keys_are_never_proven(pairs: list[tuple[str, Any]]) -> None:
    text = "{" + ",".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in pairs) + "}"
    fast = assert_agrees(text.encode())
    if len({k for k, _ in pairs}) < len(pairs):
        assert fast is NOT_PROVEN
