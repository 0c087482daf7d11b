"""A hostile tenant against POST /v1/traces: a small body that decodes into millions of
objects, nesting that exhausts a parser, a repeated key: each refused with a 4xx before it
costs the server more than the bound allows, and nothing is stored."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine

PROTOBUF = {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"}
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory,
          sqlite_template: Path) -> Iterator[tuple[Container, TestClient, dict[str, str]]]:
    root = tmp_path_factory.mktemp("otlp")
    (root / "hcp.sqlite3").write_bytes(sqlite_template.read_bytes())
    url = f"sqlite:///{root / 'hcp.sqlite3'}"
    container = Container(Settings(database_url=url, kafka_bootstrap="", data_dir=root),
                          make_engine(url))
    key = container.keys.create(["events:write"], tenant="mallory")
    with TestClient(create_app(container)) as client:
        yield container, client, {"Authorization": f"Bearer {key}"}
    container.close()


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field."""
    size, out = len(payload), bytearray([number << 3 | 2])
    while size >= 0x80:
        out.append(size & 0x7F | 0x80)
        size >>= 7
    return bytes(out + bytes([size]) + payload)


def _request(scope_spans: bytes) -> bytes:
    """ExportTraceServiceRequest{resource_spans: [{scope_spans: [<scope_spans>]}]}."""
    return _field(1, _field(2, scope_spans))


def _post(world: tuple[Container, TestClient, dict[str, str]], body: bytes,
          headers: dict[str, str]) -> tuple[int, dict[str, object]]:
    container, client, auth = world
    head = container.store.head()
    answer = client.post("/v1/traces", content=body, headers={**auth, **headers})
    assert container.store.head() == head  # nothing stored
    return answer.status_code, answer.json()


def test_a_gzip_body_of_a_million_empty_spans_is_refused_before_decoding(world) -> None:
    body = gzip.compress(_request(_field(2, b"") * 1_000_000))
    assert len(body) < 8192
    status, answer = _post(world, body, PROTOBUF)
    assert status == 413 and "spans" in answer["error"]["message"], answer


def test_a_span_of_a_million_empty_attributes_is_refused_before_decoding(world) -> None:
    span = _field(9, b"") * 1_000_000  # Span.attributes: repeated KeyValue
    status, answer = _post(world, gzip.compress(_request(_field(2, span))), PROTOBUF)
    assert status == 413 and "messages" in answer["error"]["message"], answer


def test_a_gzip_body_of_a_million_empty_json_spans_is_refused_before_parsing(world) -> None:
    text = '{"resourceSpans":[{"scopeSpans":[{"spans":[' + ",".join(["{}"] * 1_000_000) + "]}]}]}"
    status, answer = _post(world, gzip.compress(text.encode()),
                           {**JSON, "Content-Encoding": "gzip"})
    assert status == 413, answer


def test_otlp_json_nested_past_any_parser_is_a_400_not_a_500(world) -> None:
    for depth in (100, 5000, 200_000):
        status, answer = _post(world, b"[" * depth + b"]" * depth, JSON)
        assert status == 400 and answer["error"]["code"] == "malformed_otlp", (depth, answer)


def test_otlp_json_attribute_values_nested_deep_are_a_400(world) -> None:
    value = '{"stringValue": "x"}'
    for _ in range(400):  # kvlistValue in kvlistValue: 1600 levels, as text (json.dumps recurses)
        value = '{"kvlistValue": {"values": [{"key": "k", "value": ' + value + "}]}}"
    span = '{"name": "chat", "attributes": [{"key": "deep", "value": ' + value + "}]}"
    doc = '{"resourceSpans": [{"scopeSpans": [{"spans": [' + span + "]}]}]}"
    status, answer = _post(world, doc.encode(), JSON)
    assert status == 400, answer


def test_otlp_json_with_a_repeated_key_is_a_422_naming_it(world) -> None:
    body = (b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"chat","name":"other",'
            b'"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708"}]}]}]}')
    status, answer = _post(world, body, JSON)
    assert status == 422, answer
    assert answer["error"]["field"].endswith("name"), answer


def test_messages_nested_deep_inside_a_json_string_attribute_are_not_a_500(world) -> None:
    deep = "[" * 50_000 + "]" * 50_000
    span = {"name": "chat", "traceId": "0102030405060708090a0b0c0d0e0f10",
            "spanId": "0102030405060708", "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                {"key": "gen_ai.input.messages", "value": {"stringValue": deep}},
                {"key": "gen_ai.output.messages", "value": {"stringValue": deep}}]}
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    status, answer = _post(world, json.dumps(doc).encode(), JSON)
    assert status == 422, answer  # the span maps to nothing: no messages it can read
