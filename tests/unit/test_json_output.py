"""The served JSON of stored values: always valid JSON in UTF-8, however deep."""

from __future__ import annotations

import json

from kernel.json_output import json_bytes


def test_ordinary_values_encode_as_compact_json() -> None:
    value = {"a": [1, 2.5, {"b": None, "c": True}], "d": "é", "e": [], "f": {}}
    assert json_bytes(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def test_a_value_deeper_than_the_recursion_limit_still_encodes() -> None:
    value: object = 1
    for _ in range(20_000):
        value = {"a": [value]}

    assert json_bytes(value) == b'{"a":[' * 20_000 + b"1" + b"]}" * 20_000


def test_stored_nan_is_served_as_null_and_lone_surrogates_escaped() -> None:
    out = json_bytes({"x": float("nan"), "y": [float("inf")], "s": "a\ud800"})

    assert json.loads(out) == {"x": None, "y": [None], "s": "a\ud800"}
    out.decode("utf-8")  # valid UTF-8
