"""Stock clients, changed in nothing but their base URL and key, against `hcp serve` (a real
process, embedded: its evaluator is a thread of it) produce rewards under the shipped
default contract with no call of this server's own:

- the ``openai`` package's two-turn chat (no X-HCP-Session, no ``user``, no feedback) is
  one session, which ends when it has been idle for the serving contract's timeout (the
  server's own ``session.expired``, written from the log) and is scored;
- an agent instrumented with OpenTelemetry (opentelemetry-instrumentation-openai-v2 and an
  ``invoke_agent`` root) that calls the gateway, runs the tool the model asked for, and
  calls again, is one session holding its tool's result once, ended by its root span.

The serving contract is the world's ``serve`` with a 5 s idle timeout; the shipped
``examples/contracts/default.toml`` is published as it is and scores every session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contract.document import parse_contract
from evaluators.model import RewardRecord
from evaluators.rewards import RewardQuery
from hcp.bootstrap import Container
from tests.serve_process import Served, hcp_serve
from tests.serving_world import CONTRACT, DOCUMENT, taught_lora_dir, train_adapter
from tests.unit.evaluators.factories import publish
from tests.webhooks import wait_for

pytest.importorskip("peft")
openai = pytest.importorskip("openai")
pytestmark = [pytest.mark.train, pytest.mark.slow]
TENANT = "acme"
SHIPPED = (Path(__file__).resolve().parents[2] / "examples" / "contracts" / "default.toml").read_text()
IDLE = DOCUMENT + '\n[harness.sessions]\nidle_timeout = "5s"\n'
WEATHER = {"type": "function", "function": {
    "name": "weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}


def sessions_end_and_default_scores(c: Container) -> None:
    draft = c.contracts.create_draft(CONTRACT, IDLE, "tester", parent_version=1)
    c.contracts.publish(CONTRACT, draft.version, "tester")
    c.serving.move(CONTRACT, None, draft.version, "tester", "sessions end after 5 s idle")
    publish(c.contracts, SHIPPED, name="default")


@pytest.fixture
def served(tmp_path: Path, sqlite_template: Path) -> Iterator[Served]:
    with hcp_serve(tmp_path, sqlite_template, ["chat:write", "events:write", "rewards:read"],
                   tenant=TENANT, before=sessions_end_and_default_scores) as served:
        yield served


def default_reward(c: Container, stream: str, timeout: float = 90) -> RewardRecord:
    def found() -> list[RewardRecord]:
        return [r for r in c.rewards.find(RewardQuery(stream_id=stream, limit=10))
                if r.contract_name == "default"]

    return wait_for(found, timeout, f"no reward under default for {stream}")[0]


def test_a_stock_two_turn_chat_is_one_session_that_ends_idle_and_is_scored(served: Served) -> None:
    client = openai.OpenAI(base_url=f"{served.url}/v1", api_key=served.key, max_retries=0,
                           timeout=120)
    history: list[dict[str, Any]] = [{"role": "user", "content": "hello"}]
    first = client.chat.completions.create(model="chat", messages=history)
    history += [first.choices[0].message.model_dump(exclude_none=True),
                {"role": "user", "content": "what is the weather like?"}]
    second = client.chat.completions.create(model="chat", messages=history)
    session = f"session-{first.hcp['session']}"
    assert second.hcp["session"] == first.hcp["session"] and second.hcp["session_from"] == "history"
    c = served.container
    reward = default_reward(c, session)
    events = c.store.read_stream(session, 0, 100, TENANT)
    assert [e.type for e in events] == [
        "session.started", "turn.user", "route.decided", "turn.assistant", "turn.user",
        "route.decided", "turn.assistant", "session.expired"]  # written by hcp serve's evaluator
    assert events[-1].metadata.actor == "system:sessions"
    assert events[-1].payload["idle_timeout_s"] == 5 and events[-1].payload["contract"] == f"{CONTRACT}@2"
    assert reward.subject_id == f"episode:{session}:8" and not reward.errors
    # The user moved on without asking again: the first answer counts, and it trains.
    assert reward.components["task_success"] == 1.0 and reward.eligible


def instrumented(base: str, key: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, Any]:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(
        endpoint=f"{base}/v1/traces", headers={"Authorization": f"Bearer {key}"})))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    return provider, instrumentor, openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0,
                                                 timeout=120)


def teach_the_weather_call(served: Served, question: list[dict[str, Any]]) -> None:
    """The chat slot, taught to call the weather tool for this question, in production
    (a random tiny model calls no tool by itself)."""
    from serving.openai_shapes import ChatRequest
    from serving.prompting import chat_messages, offered_tools, system_text

    c, harness = served.container, parse_contract(IDLE).harness
    request = ChatRequest.model_validate({"messages": question, "tools": [WEATHER]})
    rendered = chat_messages(system_text(harness, "chat", offered_tools(harness, "chat", request)),
                             request.messages)
    with served.http() as http:  # something rewarded, for the run to train on
        chat = http.post("/v1/chat/completions", json={
            "model": "chat", "messages": [{"role": "user", "content": "hello"}]})
        ended = http.post("/v1/feedback", json={"session": chat.headers["x-hcp-session"],
                                                "rating": 1.0, "end": {"outcome": "success"}})
        assert ended.status_code == 201, ended.text
    c.evaluator("e2e").drain(timeout=60)
    call = '{"tool": "weather", "arguments": {"city": "Oslo"}}'
    adapter, _ = train_adapter(c, "chat", 0, "tool calls", taught_lora_dir(
        Path(c.registry.base_model("tiny").path), served.root / "taught", rendered, call))
    c.aliases.move("chat", "production", adapter.adapter_id, "tester", "calls tools")


def test_an_instrumented_agent_is_one_session_with_its_tool_result_once(
        served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    question = [{"role": "user", "content": "weather in Oslo?"}]
    teach_the_weather_call(served, question)
    provider, instrumentor, client = instrumented(served.url, served.key, monkeypatch)
    tracer = provider.get_tracer("weather-agent")
    try:
        with tracer.start_as_current_span("invoke_agent weather-agent", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather-agent"}):
            asked = client.chat.completions.create(model="chat", messages=question, tools=[WEATHER])
            [call] = asked.choices[0].message.tool_calls
            with tracer.start_as_current_span("execute_tool weather", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "weather",
                    "gen_ai.tool.call.id": call.id, "gen_ai.tool.call.result": "sunny, 21 C"}):
                result = "sunny, 21 C"
            client.chat.completions.create(model="chat", tools=[WEATHER], messages=[
                *question, asked.choices[0].message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": call.id, "content": result}])
        provider.force_flush()
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    c = served.container
    assert [s for s in c.store.streams_of_tenant(TENANT) if s.startswith("otel:")] == []
    session = f"session-{asked.hcp['session']}"
    reward = default_reward(c, session)
    events = c.store.read_stream(session, 0, 100, TENANT)
    types = [e.type for e in events]
    assert types.count("tool.result") == 1 and types.count("turn.user") == 1
    assert types.count("turn.assistant") == 2 and types.count("trace.linked") == 1
    [result_event] = [e for e in events if e.type == "tool.result"]
    assert result_event.payload["call_id"] == call.id and result_event.payload["output"] == "sunny, 21 C"
    assert types[-1] == "episode.completed" and events[-1].payload["otel_status"] == "unset"
    assert "outcome" not in events[-1].payload  # an unset status says nothing of the goal
    assert reward.subject_id == f"episode:{session}:{events[-1].stream_seq}" and not reward.errors
    assert reward.components["task_success"] == 0.5 and not reward.eligible
