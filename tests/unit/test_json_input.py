"""Strict JSON input: what parses but cannot be stored as sent is refused, naming the field."""

from __future__ import annotations

import json

import pytest

from kernel.json_input import JsonLimits, JsonRejected, check_json_value, parse_strict


def rejected(raw: bytes | str) -> JsonRejected:
    with pytest.raises(JsonRejected) as caught:
        parse_strict(raw)
    return caught.value


def test_plain_json_parses_as_json_loads_would() -> None:
    text = '{"a": [1, 2.5, -3e2, true, null, "é", "\\ud83d\\ude00"], "b": {"c": ""}}'
    assert parse_strict(text.encode()) == json.loads(text)


@pytest.mark.parametrize(("body", "field", "words"), [
    ('{"events": [{"payload": {"x": NaN}}]}', "events[0].payload.x", "finite"),
    ('{"a": {"b": [1, Infinity]}}', "a.b[1]", "finite"),
    ('{"a": -Infinity}', "a", "finite"),
    ('{"a": 1e400}', "a", "finite"),
    ('{"a": {"x": 1, "x": 2}}', "a.x", "more than once"),
    ('{"x": 1, "y": {}, "x": 1}', "x", "more than once"),
    ('{"description": "\\ud800"}', "description", "lone surrogate"),
    ('{"a": ["ok", "\\udfff tail"]}', "a[1]", "lone surrogate"),
    ('{"\\ud800": 1}', "\\ud800", "lone surrogate"),
    ('{"path": "/tmp/a\\u0000b"}', "path", "NUL"),
])
def test_values_that_cannot_be_stored_as_sent_are_refused_by_field(body: str, field: str,
                                                                    words: str) -> None:
    error = rejected(body.encode())

    assert not error.whole_body
    assert error.field == field.replace("\\ud800", "\ud800")
    assert words in error.message


@pytest.mark.parametrize(("raw", "words"), [
    (b'{"text": "\xff\xfe"}', "not UTF-8"),
    (b"[" * 100_000 + b"]" * 100_000, "nests deeper"),
    (b'{"n": ' + b"9" * 5000 + b"}", "number is too long"),
])
def test_a_body_that_is_not_json_text_at_all_is_refused_as_a_whole(raw: bytes, words: str) -> None:
    error = rejected(raw)

    assert (error.whole_body, error.field) == (True, "body")
    assert words in error.message


def test_broken_syntax_stays_a_json_decode_error() -> None:
    with pytest.raises(json.JSONDecodeError):
        parse_strict(b'{"events": [')


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


@pytest.mark.parametrize(("value", "field", "words"), [
    (nested(4), "p.a.a.a", "deeper than 3"),
    ({"l": [[[[1]]]]}, "p.l[0][0]", "deeper than 3"),
    ({f"k{i}": i for i in range(6)}, "p", "6 keys"),
    ({"s": "x" * 11}, "p.s", "11 characters"),
    ({"x" * 11: 1}, "p." + "x" * 11, "11 characters"),
])
def test_limits_name_the_field_under_the_root(value: object, field: str, words: str) -> None:
    with pytest.raises(JsonRejected) as caught:
        check_json_value(value, JsonLimits(max_depth=3, max_object_keys=5, max_string_chars=10), "p")

    assert caught.value.field == field
    assert words in caught.value.message


def test_within_limits_passes_and_depth_counts_containers_only() -> None:
    check_json_value(nested(3), JsonLimits(max_depth=3), "p")
    check_json_value({"a": [1, "s", None, 2.5]}, JsonLimits(max_depth=2), "p")


def test_the_first_problem_in_document_order_is_named() -> None:
    with pytest.raises(JsonRejected) as caught:
        check_json_value({"a": [1, {"b": float("nan")}], "c": float("inf")}, JsonLimits(), "")
    assert caught.value.field == "a[1].b"


def test_checking_is_iterative_so_any_depth_is_safe() -> None:
    deep: list = []
    for _ in range(50_000):
        deep = [deep]
    with pytest.raises(JsonRejected) as caught:
        check_json_value(deep, JsonLimits(max_depth=64), "p")
    assert "deeper than 64" in caught.value.message
