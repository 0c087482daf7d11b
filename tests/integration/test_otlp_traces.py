"""POST /v1/traces with the real OpenTelemetry SDK and OTLP/HTTP exporter (and hand-written
OTLP/JSON): GenAI spans become sessions of the key's tenant that the evaluator scores."""

from __future__ import annotations

import gzip
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from api.app import create_app
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.served_app import serve
from tests.unit.evaluators.factories import contract_text, publish


@pytest.fixture
def world(database_url: str, tmp_path: Path) -> Iterator[tuple[Container, str, str]]:
    settings = Settings(database_url=database_url, kafka_bootstrap="", data_dir=tmp_path)
    container = Container(settings, make_engine(database_url))
    publish(container.contracts, contract_text())
    key = container.keys.create(["events:write", "events:read", "rewards:read"], label="otel",
                                tenant="acme")
    with serve(create_app(container)) as base:
        yield container, base, key
    container.close()


def tracer(base: str, key: str) -> tuple[Any, TracerProvider]:
    exporter = OTLPSpanExporter(endpoint=f"{base}/v1/traces", compression=Compression.Gzip,
                                headers={"Authorization": f"Bearer {key}"})
    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("test"), provider


def messages(*items: dict[str, Any]) -> str:
    return json.dumps(list(items))


def test_an_agent_trace_becomes_a_scored_session(world: tuple[Container, str, str]) -> None:
    container, base, key = world
    trace, provider = tracer(base, key)
    conversation = f"conv-{uuid.uuid4().hex[:8]}"
    with trace.start_as_current_span("invoke_agent support", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": conversation}):
        with trace.start_as_current_span("chat gpt-x", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-x",
                "gen_ai.conversation.id": conversation, "gen_ai.response.id": "resp-1",
                "gen_ai.usage.output_tokens": 7,
                "gen_ai.input.messages": messages(
                    {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
                    {"role": "user", "parts": [{"type": "text", "content": "weather in Paris?"}]}),
                "gen_ai.output.messages": messages({"role": "assistant", "parts": [
                    {"type": "tool_call", "id": "call-1", "name": "weather",
                     "arguments": {"city": "Paris"}}]})}):
            pass
        with trace.start_as_current_span("execute_tool weather", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "weather",
                "gen_ai.tool.call.id": "call-1", "gen_ai.tool.call.result": "sunny"}):
            pass
        with trace.start_as_current_span("chat gpt-x", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.conversation.id": conversation,
                "gen_ai.input.messages": messages(
                    {"role": "user", "parts": [{"type": "text", "content": "weather in Paris?"}]},
                    {"role": "assistant", "parts": [{"type": "tool_call", "id": "call-1",
                                                     "name": "weather"}]},
                    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call-1",
                                                "response": "sunny"}]}),
                "gen_ai.output.messages": messages({"role": "assistant", "parts": [
                    {"type": "text", "content": "Sunny in Paris."}]})}):
            pass
    provider.shutdown()
    stream = f"otel:acme:{conversation}"
    events = container.store.read_stream(stream, 0, 100, "acme")
    assert [e.type for e in events] == ["session.started", "turn.user", "turn.assistant", "tool.called",
                                        "tool.result", "turn.assistant", "episode.completed"]
    assert events[4].payload["output"] == "sunny" and events[4].payload["tool"] == "weather"
    assert events[1].payload["text"] == "weather in Paris?"
    assert events[3].payload == {"call_id": "call-1", "tool": "weather", "arguments": {"city": "Paris"}}
    assert events[5].payload["text"] == "Sunny in Paris."
    assert events[2].payload["response_id"] == "resp-1" and events[2].payload["tokens"] == 7
    assert events[0].payload["harness"] == "support-bot"
    assert {e.metadata.tenant for e in events} == {"acme"} and events[0].metadata.actor == "key:otel"
    container.evaluator().drain(timeout=60)
    rewards = httpx.get(f"{base}/v1/rewards", params={"stream_id": stream},
                        headers={"Authorization": f"Bearer {key}"}).json()["rewards"]
    assert rewards, "the evaluator scored nothing of the OTLP session"


def _json_request(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "legacy-app"}}]},
        "scopeSpans": [{"spans": spans}]}]}


def _span(trace: str, span: str, attributes: dict[str, str], events: list[dict] | None = None) -> dict:
    return {"traceId": trace, "spanId": span, "name": "chat", "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000001000000000",
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
            "events": events or []}


def post(base: str, key: str, body: dict[str, Any], zipped: bool = True) -> httpx.Response:
    data = json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    if zipped:
        data, headers["Content-Encoding"] = gzip.compress(data), "gzip"
    return httpx.post(f"{base}/v1/traces", content=data, headers=headers)


def test_deprecated_forms_json_idempotence_and_what_is_skipped(world: tuple[Container, str, str]) -> None:
    container, base, key = world
    trace = uuid.uuid4().hex
    prompt = _span(trace, "a" * 16, {"gen_ai.operation.name": "chat",
                                     "gen_ai.prompt": json.dumps([{"role": "user", "content": "hi"}]),
                                     "gen_ai.completion": json.dumps([{"role": "assistant",
                                                                       "content": "hello!"}])})
    prompt["parentSpanId"] = "c" * 16
    by_events = _span(trace, "b" * 16, {"gen_ai.operation.name": "chat"}, events=[
        {"name": "gen_ai.user.message", "attributes": [{"key": "content", "value": {"stringValue": "bye"}}]},
        {"name": "gen_ai.choice", "attributes": [{"key": "message", "value": {
            "stringValue": json.dumps({"role": "assistant", "content": "see you"})}}]}])
    plain = _span(trace, "d" * 16, {"http.method": "GET"})
    answer = post(base, key, _json_request([prompt, by_events, plain]))
    assert answer.status_code == 200, answer.text
    assert answer.json()["partialSuccess"]["rejectedSpans"] == "1"
    assert "not a GenAI span" in answer.json()["partialSuccess"]["errorMessage"]
    assert answer.headers["x-hcp-events-created"] == "6"
    events = container.store.read_stream(f"otel:acme:{trace}", 0, 100, "acme")
    assert [(e.type, e.payload.get("text")) for e in events] == [
        ("session.started", None), ("turn.user", "hi"), ("turn.assistant", "hello!"),
        ("turn.user", "bye"), ("turn.assistant", "see you"), ("episode.completed", None)]
    again = post(base, key, _json_request([prompt, by_events, plain]), zipped=False)
    assert again.status_code == 200 and again.headers["x-hcp-events-created"] == "0"
    assert len(container.store.read_stream(f"otel:acme:{trace}", 0, 100, "acme")) == len(events)


def test_what_cannot_be_mapped_is_a_clear_4xx(world: tuple[Container, str, str]) -> None:
    container, base, key = world
    nothing = post(base, key, _json_request([_span(uuid.uuid4().hex, "e" * 16, {"http.method": "GET"})]))
    assert nothing.status_code == 422 and "none of the 1 spans" in nothing.json()["error"]["message"]
    no_content = post(base, key, _json_request([_span(uuid.uuid4().hex, "f" * 16,
                                                      {"gen_ai.operation.name": "chat"})]))
    assert no_content.status_code == 422 and "CAPTURE_MESSAGE_CONTENT" in no_content.text
    garbage = httpx.post(f"{base}/v1/traces", content=b"\xff\x00junk", headers={
        "Authorization": f"Bearer {key}", "Content-Type": "application/x-protobuf"})
    assert garbage.status_code == 400 and garbage.json()["error"]["code"] == "malformed_otlp"
    for not_otlp in ({"hello": 1}, [], {}):  # JSON, but no request (once answered 200 {})
        refused = httpx.post(f"{base}/v1/traces", json=not_otlp,
                             headers={"Authorization": f"Bearer {key}"})
        assert refused.status_code == 400, (not_otlp, refused.text)
        assert "resourceSpans" in refused.json()["error"]["message"]
    assert container.store.head("acme") == 0
