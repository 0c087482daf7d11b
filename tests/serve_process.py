"""`hcp serve` in a process of its own on the serving world (tests/serving_world.py): the
tiny base, the published serving contract, the specialists; the evaluator and the webhook
deliverer run in it as they do for a user. For the e2e tests of the integrations."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from access.keys import create_key
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.ports import free_port
from tests.serving_world import CONTRACT, build_world, lora_dir, train_adapter
from tests.unit.trainer_core.fixtures import RecordingDispatcher
from tests.webhooks import wait_for
from trainer.registry.model import AdapterVersion

BIN = Path(sys.executable).parent


@dataclass
class Served:
    container: Container  # the same database, for set-up and for looking behind the API
    url: str
    key: str
    root: Path

    def http(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.key}"},
                            timeout=120)


@contextmanager
def hcp_serve(root: Path, sqlite_template: Path, scopes: list[str], tenant: str | None = None,
              before: Callable[[Container], None] | None = None) -> Iterator[Served]:
    """The world built (then ``before`` run on it), a key with ``scopes`` (of ``tenant``),
    and the server up."""
    (root / "hcp.sqlite3").write_bytes(sqlite_template.read_bytes())
    url = f"sqlite:///{root / 'hcp.sqlite3'}"
    settings = Settings(database_url=url, data_dir=root / "data", models_dir=root / "models",
                        serving_contract=CONTRACT, kafka_bootstrap="", redis_url="")
    container = Container(settings=settings, engine=make_engine(url), dispatch_to=RecordingDispatcher())
    build_world(container, root / "models")
    if before is not None:
        before(container)
    key = create_key(container.engine, scopes, "e2e", tenant=tenant)
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HCP_")},
           "HCP_DATABASE_URL": url, "HCP_DATA_DIR": str(root / "data"),
           "HCP_MODELS_DIR": str(root / "models"), "HCP_SERVING_CONTRACT": CONTRACT,
           "HCP_CONSOLE_SECRET": "test-secret", "HCP_WEBHOOK_BACKOFF_S": "0.2",
           "HCP_WEBHOOK_BACKOFF_MAX_S": "0.5", "HCP_WEBHOOK_ALLOWED_TARGETS": '["127.0.0.1/32"]',
           "OMP_NUM_THREADS": "1"}
    log = (root / "serve.log").open("wb")
    proc = subprocess.Popen([str(BIN / "hcp"), "serve", "--port", str(port), "--no-access-log"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        assert proc.poll() is None, (root / "serve.log").read_text()[-3000:]
        try:
            return httpx.get(f"{base}/healthz", timeout=1).status_code < 500
        except httpx.TransportError:
            return False

    try:
        wait_for(healthy, 90, "hcp serve did not come up")
        yield Served(container, base, key, root)
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()
        container.close()


def chat(http: httpx.Client, model: str, text: str) -> tuple[str, str]:
    """A greedy answer and the session the server recorded it in."""
    answer = http.post("/v1/chat/completions", json={
        "model": model, "temperature": 0, "messages": [{"role": "user", "content": text}]})
    assert answer.status_code == 200, answer.text
    return answer.json()["choices"][0]["message"]["content"], answer.headers["x-hcp-session"]


def served_adapter(served: Served, seed: int = 7) -> AdapterVersion:
    """A chat adapter registered as a run registers one: a session served, rated and scored,
    a run fired on it, and a LoRA made portable the way the runner leaves what it trained."""
    from trainer.ml.portable import make_portable

    c = served.container
    with served.http() as http:
        _, session = chat(http, "chat", "hello")
        ended = http.post("/v1/feedback", json={"session": session, "rating": 1.0,
                                                "end": {"outcome": "success"}})
        assert ended.status_code == 201, ended.text
    c.evaluator("e2e").drain(timeout=60)
    base = c.registry.base_model("tiny")
    made = lora_dir(Path(base.path), served.root / f"trained-{seed}", seed=seed)
    make_portable(made, base.name, base.weights_sha256)
    adapter, _ = train_adapter(c, "chat", seed, "an adapter to serve", made)
    return adapter
