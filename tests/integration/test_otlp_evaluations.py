"""Evaluation results out: a session sent as OTLP spans is scored, and its reward reaches a
real OTLP/HTTP logs receiver as gen_ai.evaluation.result on the evaluated span; a receiver
that is down holds the checkpoint, nothing is lost."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from api.app import create_app
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.ports import free_port
from tests.served_app import serve
from tests.unit.evaluators.factories import contract_text, publish
from tests.webhooks import wait_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def receiver_port() -> int:
    return free_port()


@pytest.fixture
def container(database_url: str, tmp_path: Path, receiver_port: int) -> Iterator[Container]:
    settings = Settings(database_url=database_url, kafka_bootstrap="", data_dir=tmp_path,
                        otlp_evaluations_endpoint=f"http://127.0.0.1:{receiver_port}/v1/logs")
    c = Container(settings, make_engine(database_url))
    publish(c.contracts, contract_text())
    yield c
    c.close()


def _listening(port: int) -> bool:
    try:
        httpx.post(f"http://127.0.0.1:{port}/v1/logs", content=b"", timeout=1)
        return True
    except httpx.TransportError:
        return False


def test_rewards_reach_the_receiver_on_the_evaluated_span(container: Container, receiver_port: int,
                                                          tmp_path: Path) -> None:
    key = container.keys.create(["events:write"], label=f"o-{uuid.uuid4().hex[:6]}", tenant="acme")
    provider = TracerProvider()
    with serve(create_app(container)) as base:
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(
            endpoint=f"{base}/v1/traces", headers={"Authorization": f"Bearer {key}"})))
        tracer = provider.get_tracer("t")
        with tracer.start_as_current_span("chat", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.response.id": "resp-9",
                "gen_ai.prompt": json.dumps([{"role": "user", "content": "2+2?"}]),
                "gen_ai.completion": json.dumps([{"role": "assistant", "content": "4"}])}) as span:
            trace_id = format(span.get_span_context().trace_id, "032x")
            span_id = format(span.get_span_context().span_id, "016x")
        provider.shutdown()
    container.evaluator().drain(timeout=60)
    exporter = container.integrations.evaluation_exporter()
    assert exporter is not None
    with pytest.raises(httpx.HTTPError):  # the receiver is not up yet: nothing moves
        exporter.step()
    assert container.checkpoints.load("otlp:evaluations") == 0
    out = tmp_path / "logs.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "tests.otlp_receiver", str(receiver_port), str(out)],
                            cwd=ROOT)
    try:
        wait_for(lambda: _listening(receiver_port), 20, "the receiver did not come up")
        assert exporter.step() >= 1
    finally:
        proc.terminate()
        proc.wait(10)
        exporter.close()
    records = [json.loads(line) for line in out.read_text().splitlines()]
    (ours,) = [r for r in records if r["trace_id_hex"] == trace_id]
    assert ours["eventName"] == "gen_ai.evaluation.result" and ours["span_id_hex"] == span_id
    attrs = ours["attrs"]
    assert attrs["gen_ai.evaluation.name"]["stringValue"] == "default@1"
    assert attrs["gen_ai.response.id"]["stringValue"] == "resp-9"
    assert 0.0 <= attrs["gen_ai.evaluation.score.value"]["doubleValue"] <= 1.0
    assert attrs["gen_ai.evaluation.score.label"]["stringValue"] in ("eligible", "ineligible")
    assert container.checkpoints.load("otlp:evaluations") == container.rewards.head()
