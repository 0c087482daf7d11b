"""Embedded `hcp serve` on its own: a user who posts a session sees its reward, with no
`hcp evaluator` started by hand; `--no-run-workers` leaves scoring to a separate one."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.ports import free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
HCP = str(Path(sys.executable).parent / "hcp")
CONTRACT = (ROOT / "examples" / "contracts" / "default.toml").read_text()


@pytest.fixture
def data_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HCP_")}
    env["HCP_DATA_DIR"] = str(tmp_path / "hcp-data")
    subprocess.run([HCP, "db", "upgrade"], env=env, check=True, capture_output=True)
    return env


def admin_key(env: dict[str, str]) -> str:
    made = subprocess.run([HCP, "keys", "create", "--scope", "admin"], env=env, check=True,
                          capture_output=True, text=True)
    return made.stdout.strip().splitlines()[-1]


def served(env: dict[str, str], *options: str) -> Iterator[httpx.Client]:
    port = free_port()
    key = admin_key(env)
    proc = subprocess.Popen([HCP, "serve", "--port", str(port), "--no-access-log", *options],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30,
                          headers={"Authorization": f"Bearer {key}"})
    try:
        _wait(lambda: proc.poll() is None and _healthy(client), 60, "the API did not come up")
        yield client
    finally:
        client.close()
        proc.terminate()
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, stderr[-2000:]


@pytest.fixture
def api(data_env: dict[str, str]) -> Iterator[httpx.Client]:
    yield from served(data_env)


def _healthy(client: httpx.Client) -> bool:
    try:
        return client.get("/healthz").status_code == 200
    except httpx.TransportError:
        return False


def _wait(ready, timeout_s: float, message: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.3)
    raise AssertionError(message)


def publish_default_contract(api: httpx.Client) -> None:
    draft = api.post("/v1/contracts/default/versions", json={"document": CONTRACT})
    assert draft.status_code == 201, draft.text
    published = api.post(f"/v1/contracts/default/versions/{draft.json()['version']}/publish")
    assert published.status_code == 200, published.text


def post_episode(api: httpx.Client) -> str:
    stream = f"session-{uuid.uuid4().hex[:10]}"
    events = [{"stream_id": stream, "type": t, "payload": p} for t, p in (
        ("turn.user", {"text": "What is 2 + 2?"}),
        ("turn.assistant", {"text": "4"}),
        ("feedback.given", {"rating": 1.0}),
        ("episode.completed", {"outcome": "success"}))]
    answer = api.post("/v1/events", json={"events": events})
    assert answer.status_code == 201, answer.text
    return stream


def rewards_of(api: httpx.Client, stream: str) -> list[dict]:
    page = api.get("/v1/rewards", params={"stream_id": stream, "contract": "default"})
    assert page.status_code == 200, page.text
    return page.json()["rewards"]


def test_a_posted_session_is_scored_by_the_server_alone(api: httpx.Client) -> None:
    publish_default_contract(api)
    stream = post_episode(api)
    _wait(lambda: rewards_of(api, stream), 60, "no reward: the server did not score the session")
    (reward,) = rewards_of(api, stream)
    assert reward["subject"]["stream_id"] == stream and reward["contract"]["name"] == "default"
    assert 0.0 <= reward["score"] <= 1.0


def test_no_run_workers_leaves_scoring_to_a_separate_evaluator(data_env: dict[str, str]) -> None:
    for api in served(data_env, "--no-run-workers"):
        publish_default_contract(api)
        stream = post_episode(api)
        time.sleep(3)  # what the in-process evaluator needs, at most, to score one session
        assert rewards_of(api, stream) == []
        subprocess.run([HCP, "evaluator", "--once"], env=data_env, check=True, capture_output=True,
                       timeout=300)
        assert len(rewards_of(api, stream)) == 1
