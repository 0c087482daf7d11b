"""An agent's trace is one session whatever the export's batch boundaries, its episode ends
after its turns, a tool's result is recorded once, and a span that comes after its trace's
root is recorded after the episode and said so: the OpenTelemetry SDK's OTLP exporter
against a served API."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from api.app import create_app
from evaluators.rewards import RewardQuery
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.served_app import serve
from tests.unit.evaluators.factories import contract_text, publish


@pytest.fixture
def world(database_url: str, tmp_path: Path) -> Iterator[tuple[Container, str, str]]:
    settings = Settings(database_url=database_url, kafka_bootstrap="", data_dir=tmp_path)
    container = Container(settings, make_engine(database_url))
    publish(container.contracts, contract_text(subject="episode"))
    key = container.keys.create(["events:write", "events:read"], label="otel", tenant="acme")
    with serve(create_app(container)) as base:
        yield container, base, key
    container.close()


def parts(role: str, **part: Any) -> dict[str, Any]:
    return {"role": role, "parts": [part]}


def agent_run(conversation: str) -> list[ReadableSpan]:
    """An agent's trace, as the SDK ends its spans: children first, the root last. Only the
    root names the conversation (as agent frameworks do)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    call = f"call-{uuid.uuid4().hex[:6]}"
    with tracer.start_as_current_span("invoke_agent", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": conversation}):
        with tracer.start_as_current_span("chat", attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps([parts("user", type="text", content="weather?")]),
                "gen_ai.output.messages": json.dumps([parts(
                    "assistant", type="tool_call", id=call, name="weather", arguments={})])}):
            pass
        with tracer.start_as_current_span("execute_tool", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "weather",
                "gen_ai.tool.call.id": call, "gen_ai.tool.call.result": "sunny"}):
            pass
        with tracer.start_as_current_span("chat", attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps([
                    parts("user", type="text", content="weather?"),
                    parts("assistant", type="tool_call", id=call, name="weather"),
                    parts("tool", type="tool_call_response", id=call, response="sunny")]),
                "gen_ai.output.messages": json.dumps([parts("assistant", type="text",
                                                            content="Sunny.")])}):
            pass
    provider.shutdown()
    return list(memory.get_finished_spans())


def export(base: str, key: str, batches: list[list[ReadableSpan]]) -> None:
    exporter = OTLPSpanExporter(endpoint=f"{base}/v1/traces", headers={"Authorization": f"Bearer {key}"})
    for batch in batches:
        assert exporter.export(batch).name == "SUCCESS"
    exporter.shutdown()


EXPECTED = ["session.started", "turn.user", "turn.assistant", "tool.called", "tool.result",
            "turn.assistant", "episode.completed"]


@pytest.mark.parametrize("split", ["one batch", "span by span", "children then root"])
def test_an_agent_trace_is_one_session_whatever_the_batches(world, split: str) -> None:
    container, base, key = world
    spans = agent_run(f"conv-{uuid.uuid4().hex[:8]}")
    batches = {"one batch": [spans], "span by span": [[s] for s in spans],
               "children then root": [spans[:-1], spans[-1:]]}[split]
    export(base, key, batches)
    export(base, key, batches)  # sent again: nothing more
    streams = [s for s in container.store.streams_of_tenant("acme") if s.startswith("otel:")]
    assert len(streams) == 1, streams
    events = container.store.read_stream(streams[0], 0, 100, "acme")
    assert [e.type for e in events] == EXPECTED
    assert events[4].payload["output"] == "sunny"
    assert events[-1].payload["otel_trace_id"] == events[0].payload["otel_trace_id"]
    container.evaluator().drain(timeout=60)
    [reward] = container.rewards.find(RewardQuery(stream_id=streams[0], limit=10))
    assert reward.subject_id == f"episode:{streams[0]}:7" and not reward.errors


def test_a_span_after_its_roots_end_is_recorded_after_the_episode_and_said_so(world) -> None:
    container, base, key = world
    spans = agent_run("late")
    root, children = spans[-1], spans[:-1]
    export(base, key, [[children[0], root]])
    body = encode_spans(children[1:]).SerializeToString()  # what the exporter would send
    answer = httpx.post(f"{base}/v1/traces", content=body, headers={
        "Authorization": f"Bearer {key}", "Content-Type": "application/x-protobuf"})
    assert answer.status_code == 200
    [stream] = [s for s in container.store.streams_of_tenant("acme") if s.startswith("otel:")]
    types = [e.type for e in container.store.read_stream(stream, 0, 100, "acme")]
    assert types == ["session.started", "turn.user", "turn.assistant", "tool.called",
                     "episode.completed", "tool.result", "turn.assistant"]
    said = ExportTraceServiceResponse.FromString(answer.content).partial_success.error_message
    assert "2 recorded after their trace's episode ended" in said
