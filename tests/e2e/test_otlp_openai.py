"""A stock OpenAI client instrumented by opentelemetry-instrumentation-openai-v2 calls this
server's own POST /v1/chat/completions and exports its spans to POST /v1/traces: the spans
join the session the gateway recorded (one session, not two), and the evaluator in
`hcp serve` scores it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hcp.bootstrap import Container
from tests.serve_process import hcp_serve
from tests.serving_world import CONTRACT
from tests.webhooks import wait_for

pytest.importorskip("peft")
openai = pytest.importorskip("openai")
pytest.importorskip("opentelemetry.instrumentation.openai_v2")
pytestmark = [pytest.mark.train, pytest.mark.slow]
TENANT = "acme"


@pytest.fixture
def served(tmp_path: Path, sqlite_template: Path) -> Iterator[tuple[Container, str, str]]:
    scopes = ["chat:write", "events:write", "rewards:read"]
    with hcp_serve(tmp_path, sqlite_template, scopes, tenant=TENANT) as served:
        yield served.container, served.url, served.key


def instrumented(base: str, key: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, Any]:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    # The current conventions, message content on the span (not as separate log events).
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    provider = TracerProvider(resource=Resource.create({"service.name": "instrumented-app"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(
        endpoint=f"{base}/v1/traces", headers={"Authorization": f"Bearer {key}"})))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    client = openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0, timeout=120)
    return client, provider, instrumentor


def test_instrumented_openai_calls_become_scored_sessions(
        served: tuple[Container, str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    container, base, key = served
    client, provider, instrumentor = instrumented(base, key, monkeypatch)
    try:
        answer = client.chat.completions.create(
            model="chat", messages=[{"role": "user", "content": "hello there"}])
        provider.force_flush()
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    # One session: the spans join the gateway's, which recorded the exchange as it served it.
    assert [s for s in container.store.streams_of_tenant(TENANT) if s.startswith("otel:")] == []
    answered = container.store.get(uuid.UUID(answer.id.removeprefix("chatcmpl-")), TENANT)
    assert answered is not None and answered.stream_id.startswith("session-")
    events = container.store.read_stream(answered.stream_id, 0, 100, TENANT)
    assert [e.type for e in events] == ["session.started", "turn.user", "route.decided",
                                        "turn.assistant", "trace.linked"]
    assert events[1].payload["text"] == "hello there"
    assert events[3].payload["text"] == answer.choices[0].message.content
    assert events[4].payload["service"] == "instrumented-app"
    stream = answered.stream_id
    httpx.post(f"{base}/v1/feedback", headers={"Authorization": f"Bearer {key}"}, timeout=10,
               json={"session": stream.removeprefix("session-"), "end": {"outcome": "success"}})

    def scored() -> list[Any]:
        page = httpx.get(f"{base}/v1/rewards", params={"stream_id": stream},
                         headers={"Authorization": f"Bearer {key}"}, timeout=10)
        return page.json()["rewards"]

    rewards = wait_for(scored, 60, "the in-process evaluator did not score the session")
    assert rewards[0]["contract"]["name"] == CONTRACT
