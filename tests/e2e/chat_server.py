"""`hcp serve` on the tiny model with the chat world of tests/serving_world.py, for the
modules that drive its chat endpoint (one server per module: starting it and loading
torch is most of the cost)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from access.keys import create_key
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.ports import free_port
from tests.serving_world import CONTRACT, DOCUMENT, build_world
from tests.unit.trainer_core.fixtures import RecordingDispatcher

BIN = Path(sys.executable).parent
TENANT = "acme"


@dataclass
class Served:
    container: Container
    client: Any  # openai.OpenAI
    http: httpx.Client
    key: str
    root: Path

    @property
    def base_url(self) -> str:
        return str(self.http.base_url)

    def events(self, session: str) -> list[Any]:
        return self.container.store.read_stream(f"session-{session}", 0, 1000, TENANT)

    def types(self, session: str) -> list[str]:
        return [e.type for e in self.events(session)]


@contextmanager
def chat_server(root: Path, sqlite_template: Path, document: str = DOCUMENT,
                prepare: Callable[[Container, int], dict[str, str]] | None = None) -> Iterator[Served]:
    """The world built in a copy of the migrated template, and `hcp serve` on it, serving
    contract ``serve`` (``document``); the client's key has ``chat:write`` in tenant ``acme``.
    ``prepare``: more of the world, made before the server starts (given its port); it
    returns more of the server's environment."""
    import openai

    (root / "hcp.sqlite3").write_bytes(sqlite_template.read_bytes())
    url = f"sqlite:///{root / 'hcp.sqlite3'}"
    settings = Settings(database_url=url, data_dir=root / "data", models_dir=root / "models",
                        serving_contract=CONTRACT, kafka_bootstrap="", redis_url="")
    container = Container(settings=settings, engine=make_engine(url),
                          dispatch_to=RecordingDispatcher())
    build_world(container, root / "models", document)
    key = create_key(container.engine, ["chat:write"], "chat-client", tenant=TENANT)
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HCP_")},
           "HCP_DATABASE_URL": url, "HCP_DATA_DIR": str(root / "data"),
           "HCP_MODELS_DIR": str(root / "models"), "HCP_SERVING_CONTRACT": CONTRACT,
           "HCP_CONSOLE_SECRET": "test-secret", "OMP_NUM_THREADS": "1",
           **(prepare(container, port) if prepare is not None else {})}
    log = (root / "serve.log").open("wb")
    proc = subprocess.Popen([str(BIN / "hcp"), "serve", "--port", str(port), "--no-access-log"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(base, proc, root)
        client = openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0, timeout=120)
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"},
                          timeout=120) as http:
            yield Served(container, client, http, key, root)
    finally:
        proc.terminate()
        proc.wait(30)
        container.close()


def _wait_healthy(base: str, proc: subprocess.Popen[bytes], root: Path) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, (root / "serve.log").read_text()[-3000:]
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code < 500:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise AssertionError("hcp serve did not come up")
