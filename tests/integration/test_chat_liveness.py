"""The chat backend's decoding thread is part of the server's health: /healthz (readiness)
and /livez (liveness) name it once it runs, and answer 503 when it has stopped, and a chat
request then gets a 503 at once instead of waiting for a thread that will not answer."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.chat_world import TIMEOUT_S, chat_world

pytest.importorskip("peft")
pytestmark = [pytest.mark.train]


class _Stop(BaseException):
    """What no handler of the decoding loop catches: the thread ends, as by a bug of its own."""


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_stopped_decoding_thread_shows_in_health_and_chat_refuses_at_once(
        tmp_path: Path, sqlite_template: Path) -> None:
    from inference.types import Request, Target

    with chat_world(tmp_path, sqlite_template) as world:
        client, auth = world.client, world.key("acme")
        assert "chat" not in client.get("/healthz").json()["checks"]  # no chat served yet
        assert world.chat(auth).status_code == 200
        for path in ("/healthz", "/livez"):
            answer = client.get(path)
            assert answer.status_code == 200 and answer.json()["checks"]["chat"]["status"] == "ok"

        engine = world.container.chat.engine
        stopped = threading.Event()

        def stop(_: str) -> None:
            stopped.set()
            raise _Stop

        pool = next(iter(engine.pools.values()))  # type: ignore[attr-defined]
        engine.submit(Request(Target(pool.base, None, "fp32"),  # type: ignore[attr-defined]
                              ({"role": "user", "content": "hi"},), 8), on_delta=stop)
        assert stopped.wait(30)
        deadline = time.monotonic() + 30
        while engine.liveness() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # the exception is still unwinding the thread
        for path in ("/healthz", "/livez"):
            answer = client.get(path)
            assert answer.status_code == 503 and "Retry-After" in answer.headers
            assert answer.json()["checks"]["chat"] == {
                "status": "down", "latency_ms": 0.0, "error": "decoding thread stopped"}
        started = time.monotonic()
        refused = world.chat(auth)
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"]["code"] == "backend_unavailable"
        assert time.monotonic() - started < TIMEOUT_S / 4
