"""An in-process API serving chat on the tiny model (tests/serving_world.py), with keys of
two tenants: what the chat attacks of this suite run against."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from fastapi.testclient import TestClient

from access.keys import create_key
from api.app import create_app
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.serving_world import CONTRACT, build_world
from tests.unit.trainer_core.fixtures import RecordingDispatcher

TIMEOUT_S = 20.0  # HCP_SERVING_TIMEOUT_S here: a request that would hang fails the test fast


@dataclass
class ChatWorld:
    container: Container
    client: TestClient

    def key(self, tenant: str | None, scopes: tuple[str, ...] = ("chat:write",)) -> dict[str, str]:
        key = create_key(self.container.engine, list(scopes), tenant=tenant)
        return {"Authorization": f"Bearer {key}"}

    def chat(self, auth: dict[str, str], text: str = "hello", **fields: Any) -> httpx.Response:
        body = {"model": "chat", "messages": [{"role": "user", "content": text}],
                "max_tokens": 4, **fields}
        return self.client.post("/v1/chat/completions", headers=auth, json=body)


@contextmanager
def chat_world(root: Path, sqlite_template: Path, **settings: Any) -> Iterator[ChatWorld]:
    (root / "hcp.sqlite3").write_bytes(sqlite_template.read_bytes())
    url = f"sqlite:///{root / 'hcp.sqlite3'}"
    config = Settings(database_url=url, data_dir=root, models_dir=root / "models",
                      serving_contract=CONTRACT, kafka_bootstrap="", redis_url="",
                      serving_timeout_s=TIMEOUT_S, **settings)
    # Runs are recorded, never trained: served_and_trained registers the adapter of the run
    # it fires, the way a runner ends it, and an in-process runner would claim it first.
    container = Container(settings=config, engine=make_engine(url),
                          dispatch_to=RecordingDispatcher())
    build_world(container, root / "models")
    with TestClient(create_app(container)) as client:
        yield ChatWorld(container, client)
    container.close()


def served_and_trained(world: ChatWorld, root: Path, auth: dict[str, str]) -> dict[str, str]:
    """One chat exchange ended with feedback and scored, an adapter trained on it (made
    portable, as the trainer stores one) and promoted to production: a world where every
    read route has something to show. The values name what it made, by path parameter."""
    from tests.serving_world import lora_dir, train_adapter
    from trainer.ml.portable import make_portable

    c = world.container
    answer = world.chat(auth)
    session = answer.headers["X-HCP-Session"]
    ended = world.client.post("/v1/feedback", headers=auth, json={
        "session": session, "rating": 1.0, "end": {"outcome": "success"}})
    assert ended.status_code == 201, ended.text
    c.evaluator("world").drain(timeout=60)
    base = c.registry.base_model("tiny")
    directory = lora_dir(Path(base.path), root / "adapter", seed=3)
    make_portable(directory, base.name, base.weights_sha256)
    adapter, firing = train_adapter(c, "chat", seed=3, reason="a world", directory=directory)
    c.aliases.move("chat", "production", adapter.adapter_id, "tester", "serve it")
    event = c.store.read_stream(f"session-{session}", 0, 1, None)[0]
    return {"name": "tiny", "specialist": "chat", "alias": "production",
            "adapter_id": adapter.adapter_id, "run_id": firing.run_id,
            "manifest_id": adapter.manifest_id, "contract": "serve", "version": "1",
            "session": session, "stream_id": f"session-{session}", "path": "config.json",
            "event_id": str(event.event_id)}
