"""A stock OpenAI client instrumented by opentelemetry-instrumentation-openai-v2 calls this
server's own POST /v1/chat/completions and exports its spans to POST /v1/traces: the spans
become a session of the key's tenant, and the evaluator in `hcp serve` scores it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from access.keys import create_key
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.ports import free_port
from tests.serving_world import CONTRACT, build_world
from tests.unit.trainer_core.fixtures import RecordingDispatcher
from tests.webhooks import wait_for

pytest.importorskip("peft")
openai = pytest.importorskip("openai")
pytest.importorskip("opentelemetry.instrumentation.openai_v2")
pytestmark = [pytest.mark.train, pytest.mark.slow]
BIN = Path(sys.executable).parent
TENANT = "acme"


@pytest.fixture
def served(tmp_path: Path, sqlite_template: Path) -> Iterator[tuple[Container, str, str]]:
    (tmp_path / "hcp.sqlite3").write_bytes(sqlite_template.read_bytes())
    url = f"sqlite:///{tmp_path / 'hcp.sqlite3'}"
    settings = Settings(database_url=url, data_dir=tmp_path / "data", models_dir=tmp_path / "models",
                        serving_contract=CONTRACT, kafka_bootstrap="", redis_url="")
    container = Container(settings=settings, engine=make_engine(url), dispatch_to=RecordingDispatcher())
    build_world(container, tmp_path / "models")
    key = create_key(container.engine, ["chat:write", "events:write", "rewards:read"], "otel-app",
                     tenant=TENANT)
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HCP_")},
           "HCP_DATABASE_URL": url, "HCP_DATA_DIR": str(tmp_path / "data"),
           "HCP_MODELS_DIR": str(tmp_path / "models"), "HCP_SERVING_CONTRACT": CONTRACT,
           "HCP_CONSOLE_SECRET": "test-secret", "OMP_NUM_THREADS": "1"}
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen([str(BIN / "hcp"), "serve", "--port", str(port), "--no-access-log"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        assert proc.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
        try:
            return httpx.get(f"{base}/healthz", timeout=1).status_code < 500
        except httpx.TransportError:
            return False

    try:
        wait_for(healthy, 90, "hcp serve did not come up")
        yield container, base, key
    finally:
        proc.terminate()
        proc.wait(30)
        container.close()


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
    streams = [s for s in container.store.streams_of_tenant(TENANT) if s.startswith("otel:")]
    assert len(streams) == 1, streams
    events = container.store.read_stream(streams[0], 0, 100, TENANT)
    assert [e.type for e in events] == ["session.started", "turn.user", "turn.assistant",
                                        "episode.completed"]
    assert events[1].payload["text"] == "hello there"
    assert events[2].payload["text"] == answer.choices[0].message.content
    assert events[2].payload["response_id"] == answer.id
    assert events[0].payload["harness"] == "instrumented-app"

    def scored() -> list[Any]:
        page = httpx.get(f"{base}/v1/rewards", params={"stream_id": streams[0]},
                         headers={"Authorization": f"Bearer {key}"}, timeout=10)
        return page.json()["rewards"]

    rewards = wait_for(scored, 60, "the in-process evaluator did not score the OTLP session")
    assert rewards[0]["contract"]["name"] == CONTRACT
