"""A chat request that carries a W3C ``traceparent`` links its trace to the session it is
recorded in: the trace's spans join that session whatever they carry (an agent root and a
tool span with no completion id), once per trace and tenant; the trace never chooses the
session. The ``openai`` package and the OpenTelemetry SDK against the API in process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.propagate import inject
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.chat_world import ChatWorld, chat_world

pytest.importorskip("peft")
openai = pytest.importorskip("openai")
pytestmark = [pytest.mark.train]
SCOPES = ("chat:write", "events:write")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[ChatWorld]:
    with chat_world(tmp_path_factory.mktemp("traceparent"), sqlite_template) as built:
        yield built


def client_of(world: ChatWorld, tenant: str) -> tuple[Any, dict[str, str]]:
    auth = world.key(tenant, SCOPES)
    return openai.OpenAI(base_url="http://testserver/v1", api_key=auth["Authorization"][7:],
                         http_client=world.client, max_retries=0), auth


def ask(client: Any, text: str, headers: dict[str, str]) -> str:
    answer = client.chat.completions.create(model="chat", max_tokens=4, extra_headers=headers,
                                            messages=[{"role": "user", "content": text}])
    return f"session-{answer.hcp['session']}"


def types(world: ChatWorld, stream: str, tenant: str) -> list[str]:
    return [e.type for e in world.container.store.read_stream(stream, 0, 100, tenant)]


def test_a_traced_request_links_its_trace_and_the_traces_spans_join_its_session(world: ChatWorld) -> None:
    client, auth = client_of(world, "acme")
    other, _ = client_of(world, "globex")
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "agent"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}):
        carrier: dict[str, str] = {}
        inject(carrier)  # what an instrumented HTTP client sends
        first = ask(client, "hello", carrier)
        second = ask(client, "something else entirely", carrier)  # another conversation
        with tracer.start_as_current_span("execute_tool", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "weather",
                "gen_ai.tool.call.id": "call-1", "gen_ai.tool.call.result": "sunny"}):
            pass
        stranger = ask(other, "hello", carrier)  # the same trace id from another tenant
    provider.shutdown()
    assert second != first  # the trace does not choose the session
    assert types(world, first, "acme") == ["session.started", "trace.linked", "turn.user",
                                           "route.decided", "turn.assistant"]
    assert "trace.linked" not in types(world, second, "acme")  # once per trace
    assert "trace.linked" in types(world, stranger, "globex")  # per tenant
    body = encode_spans(list(memory.get_finished_spans())).SerializeToString()
    sent = world.client.post("/v1/traces", content=body, headers={
        **auth, "Content-Type": "application/x-protobuf"})
    assert sent.status_code == 200, sent.text
    acme = world.container.store.streams_of_tenant("acme")
    assert [s for s in acme if s.startswith("otel:")] == []  # no session of its own
    assert types(world, first, "acme")[-2:] == ["tool.result", "episode.completed"]


def test_a_traceparent_that_does_not_parse_is_served_as_none(world: ChatWorld) -> None:
    client, _ = client_of(world, "acme")
    for bad in ("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331", "not a header",
                "00-00000000000000000000000000000000-b7ad6b7169203331-01"):
        session = ask(client, "hello", {"traceparent": bad})
        assert "trace.linked" not in types(world, session, "acme")


def test_a_marker_written_first_elsewhere_leaves_the_exchange_recorded_without_its_own(
        world: ChatWorld) -> None:
    from events.ingest import Author, ClientEvent, IngestLimits, ingest
    from serving.openai_shapes import ChatRequest
    from serving.traces import LINKED, marker_id

    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    author, gateway = Author("key:acme", "acme"), world.container.chat
    request = ChatRequest.model_validate({"model": "chat", "max_tokens": 4,
                                          "messages": [{"role": "user", "content": "hi"}]})
    exchange = gateway.prepare(request, author, None, f"00-{trace}-00f067aa0ba902b7-01")
    assert exchange.trace_marker_id == marker_id("acme", trace, LINKED)
    # Another request of the trace links it to its own session meanwhile.
    ingest(world.container.appender, [ClientEvent(
        "session-elsewhere", "trace.linked", {"trace_id": trace}, event_id=exchange.trace_marker_id)],
        IngestLimits(10, 10_000), author)
    gateway.begin(exchange, author)  # recorded, without a second marker
    assert types(world, exchange.session.stream_id, "acme") == ["session.started", "turn.user",
                                                                "route.decided"]
