"""A serving host with nothing but the API loads any adapter with stock peft: in an empty
directory, in its own process that imports no module of the server (tests/remote_host.py),
it downloads an adapter `hcp serve` answered with and the base its adapter_config.json
names, loads the pair with AutoPeftModelForCausalLM, and answers the recorded turn exactly
as the server did (and otherwise than the bare base)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from access.keys import create_key
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.ports import free_port
from tests.serving_world import CONTRACT, build_world, lora_dir, train_adapter
from tests.unit.trainer_core.fixtures import RecordingDispatcher
from tests.webhooks import wait_for
from trainer.ml.portable import make_portable

pytest.importorskip("peft")
pytestmark = [pytest.mark.train, pytest.mark.slow]
BIN = Path(sys.executable).parent
REMOTE = Path(__file__).resolve().parents[1] / "remote_host.py"


@pytest.fixture
def served(tmp_path: Path, sqlite_template: Path) -> Iterator[tuple[Container, httpx.Client, str]]:
    (tmp_path / "hcp.sqlite3").write_bytes(sqlite_template.read_bytes())
    url = f"sqlite:///{tmp_path / 'hcp.sqlite3'}"
    settings = Settings(database_url=url, data_dir=tmp_path / "data", models_dir=tmp_path / "models",
                        serving_contract=CONTRACT, kafka_bootstrap="", redis_url="")
    container = Container(settings=settings, engine=make_engine(url), dispatch_to=RecordingDispatcher())
    build_world(container, tmp_path / "models")
    key = create_key(container.engine, ["chat:write", "events:read", "registry:read"], "host")
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
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"},
                          timeout=120) as http:
            yield container, http, key
    finally:
        proc.terminate()
        proc.wait(30)
        container.close()


def chat(http: httpx.Client, model: str, text: str) -> tuple[str, str]:
    """The answer and the session the server recorded it in."""
    answer = http.post("/v1/chat/completions", json={
        "model": model, "temperature": 0, "messages": [{"role": "user", "content": text}]})
    assert answer.status_code == 200, answer.text
    return answer.json()["choices"][0]["message"]["content"], answer.headers["x-hcp-session"]


def test_a_host_with_only_the_api_answers_as_the_server_with_stock_peft(
        served: tuple[Container, httpx.Client, str], tmp_path: Path) -> None:
    container, http, key = served
    _, first = chat(http, "chat", "hello")  # something to train on, rated and scored
    assert http.post("/v1/feedback", json={"session": first, "rating": 1.0,
                                           "end": {"outcome": "success"}}).status_code == 201
    container.evaluator("remote-test").drain(timeout=60)
    base = container.registry.base_model("tiny")
    made = lora_dir(Path(base.path), tmp_path / "trained", seed=7)
    make_portable(made, base.name, base.weights_sha256)  # as the runner leaves what it trained
    adapter, _ = train_adapter(container, "chat", 7, "an adapter to serve elsewhere", made)
    answer, session = chat(http, adapter.adapter_id, "hello there, what is the weather?")

    host = tmp_path / "another-host"
    host.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HCP_")}
    ran = subprocess.run([sys.executable, str(REMOTE), str(http.base_url), key, adapter.adapter_id,
                          f"session-{session}"], cwd=host, env={**env, "HF_HUB_OFFLINE": "1"},
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    got = json.loads(ran.stdout.strip().splitlines()[-1])
    assert got["base_model_name_or_path"] == "tiny"  # a name the API resolves, not a path
    assert got["adapter_text"] == answer
    assert got["base_text"] != answer  # the adapter, not the base, gave the answer
