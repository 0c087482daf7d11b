"""Ready means ready: a served process warms the chat engine at start, and until the model
can answer, /healthz (readiness) says chat is not ready (503, "loading the model"); once it
is, chat answers without loading anything. A warm that fails stays not ready, naming the
kind of failure."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from serving.gateway import ChatGateway
from tests.chat_world import chat_world

pytest.importorskip("peft")
pytestmark = [pytest.mark.train]


def wait_ready(client: Any, seconds: float = 60) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        answer = client.get("/healthz")
        if answer.status_code == 200:
            return answer
        time.sleep(0.05)
    raise AssertionError(f"not ready after {seconds} s: {answer.json()}")


def test_chat_is_not_ready_until_the_warmed_engine_can_answer(
        tmp_path: Path, sqlite_template: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release, real_warm = threading.Event(), ChatGateway.warm

    def held_warm(self: ChatGateway) -> None:
        assert release.wait(60)
        real_warm(self)

    monkeypatch.setattr(ChatGateway, "warm", held_warm)
    with chat_world(tmp_path, sqlite_template) as world:
        client, container = world.client, world.container
        container.warm_chat()  # what `hcp serve` does at start
        loading = client.get("/healthz")
        assert loading.status_code == 503 and "Retry-After" in loading.headers
        assert loading.json()["checks"]["chat"] == {"status": "down", "latency_ms": 0.0,
                                                    "error": "loading the model"}
        assert client.get("/livez").status_code == 503  # nothing answers chat yet
        release.set()
        assert wait_ready(client).json()["checks"]["chat"]["status"] == "ok"
        engine = container.chat.engine
        assert engine.readiness().ready and engine.readiness().loaded == ("tiny",)
        before = engine.batches  # type: ignore[attr-defined]
        assert world.chat(world.key("acme")).status_code == 200
        assert engine.batches == before + 1  # type: ignore[attr-defined]


def test_a_warm_that_fails_is_not_ready_and_says_why(tmp_path: Path, sqlite_template: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: ChatGateway) -> None:
        raise OSError("/secret/path/model.safetensors: no such file")

    monkeypatch.setattr(ChatGateway, "warm", broken)
    with chat_world(tmp_path, sqlite_template) as world:
        world.container.warm_chat().join(30)
        answer = world.client.get("/healthz")
        assert answer.status_code == 503
        assert answer.json()["checks"]["chat"]["error"] == "warming failed (OSError)"
