"""An agent trace's root span says how the episode went only by a status the application
set: OK is a success, ERROR a failure, and unset (what instrumentations leave on a span
that did not raise) no outcome at all. Under the shipped default contract an unset root
is not a success: with nothing known of what the user did next, its task_success is the
unknown 0.5, and it is not trained on. The OpenTelemetry SDK's exporter against the API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from api.app import create_app
from evaluators.rewards import RewardQuery
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.integration.test_otlp_sessions import export, parts
from tests.served_app import serve
from tests.unit.evaluators.factories import publish

DEFAULT = (Path(__file__).resolve().parents[2] / "examples" / "contracts" / "default.toml").read_text()


@pytest.fixture
def world(database_url: str, tmp_path: Path) -> Iterator[tuple[Container, str, str]]:
    settings = Settings(database_url=database_url, kafka_bootstrap="", data_dir=tmp_path)
    container = Container(settings, make_engine(database_url))
    publish(container.contracts, DEFAULT)
    key = container.keys.create(["events:write", "events:read"], label="otel", tenant="acme")
    with serve(create_app(container)) as base:
        yield container, base, key
    container.close()


def agent_run(conversation: str, status: StatusCode | None) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("invoke_agent", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": conversation}) as root:
        with tracer.start_as_current_span("chat", attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps([parts("user", type="text", content="hi?")]),
                "gen_ai.output.messages": json.dumps([parts("assistant", type="text",
                                                            content="Hello.")])}):
            pass
        if status is not None:
            root.set_status(Status(status))
    provider.shutdown()
    return list(memory.get_finished_spans())


@pytest.mark.parametrize(("status", "outcome", "task_success", "eligible"), [
    (None, None, 0.5, False), (StatusCode.OK, "success", 1.0, True),
    (StatusCode.ERROR, "failure", 0.0, True)])
def test_only_a_status_the_application_set_is_an_outcome(
        world, status: StatusCode | None, outcome: str | None, task_success: float,
        eligible: bool) -> None:
    container, base, key = world
    export(base, key, [agent_run(f"conv-{status}", status)])
    [stream] = [s for s in container.store.streams_of_tenant("acme") if s.startswith("otel:")]
    end = container.store.read_stream(stream, 0, 100, "acme")[-1]
    assert end.type == "episode.completed" and end.payload.get("outcome") == outcome
    assert end.payload["otel_status"] == (status.name.lower() if status is not None else "unset")
    container.evaluator().drain(timeout=60)
    [reward] = container.rewards.find(RewardQuery(stream_id=stream, limit=10))
    assert reward.components["task_success"] == task_success
    assert reward.eligible is eligible
