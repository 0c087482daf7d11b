"""`hcp serve --workers 2`: two API processes on one port append to one log; every
acknowledged event is stored once, positions and stream seqs are gapless, and the chain
verifies as `hcp verify` recomputes it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx
from sqlalchemy.engine import Engine

from access.keys import create_key
from events.chain import verify_chain
from events.sql_store import SqlEventStore
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]


def _wait_healthy(base: str, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "hcp serve exited"
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError("the API did not come up")


def test_two_api_processes_keep_one_gapless_chained_log(database_url: str, engine: Engine) -> None:
    key = create_key(engine, ["events:write"], "workers")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "HCP_DATABASE_URL": database_url, "HCP_KAFKA_BOOTSTRAP": "",
           "HCP_CONSOLE_SECRET": "test-secret"}
    proc = subprocess.Popen([sys.executable, "-m", "cli.main", "serve", "--port", str(port),
                             "--workers", "2", "--no-access-log"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    acknowledged: list[str] = []
    failures: list[str] = []

    def client(n: int) -> None:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
            for b in range(6):
                events = [{"stream_id": f"s-{(n + i) % 3}", "type": "x.test", "payload": {"n": n, "b": b},
                           "event_id": str(uuid.uuid4())} for i in range(1 + (n + b) % 5)]
                answer = http.post("/v1/events", json={"events": events})
                if answer.status_code != 201:
                    failures.append(answer.text)
                    continue
                acknowledged.extend(e["event_id"] for e in answer.json()["events"])

    try:
        _wait_healthy(base, proc)
        threads = [threading.Thread(target=client, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        proc.terminate()
        proc.wait(30)

    assert failures == []
    store = SqlEventStore(engine)
    stored = list(store.iter_all(raw=True))
    posted = [e for e in stored if e.type == "x.test"]  # (creating the key journalled one too)
    assert sorted(str(e.event_id) for e in posted) == sorted(acknowledged)
    assert [e.position for e in stored] == list(range(1, len(stored) + 1))
    for stream in {e.stream_id for e in stored}:
        assert [e.stream_seq for e in stored if e.stream_id == stream] == list(
            range(1, sum(e.stream_id == stream for e in stored) + 1))
    report = verify_chain(stored)
    assert report.intact and report.checked == len(stored)


def test_console_sessions_hold_on_every_process_without_a_configured_secret(
        database_url: str, engine: Engine) -> None:
    """Without HCP_CONSOLE_SECRET each process used to sign sessions with a key of its own,
    so a session signed by one was refused by the other: `hcp serve` now makes one key for
    the run and hands it to every worker."""
    key = create_key(engine, ["admin"], "console")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if k != "HCP_CONSOLE_SECRET"}
    env.update(HCP_DATABASE_URL=database_url, HCP_KAFKA_BOOTSTRAP="")
    proc = subprocess.Popen([sys.executable, "-m", "cli.main", "serve", "--port", str(port),
                             "--workers", "2", "--no-access-log"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_healthy(base, proc)
        signed = httpx.post(f"{base}/console/sign-in", data={"key": key, "next": "/console"})
        assert signed.status_code == 303, signed.text
        cookies = dict(signed.cookies)
        # A new connection each time, so both processes answer some (with a key of its
        # own the other process answered 303, to the sign-in form).
        pages = [httpx.get(f"{base}/console", cookies=cookies, follow_redirects=False).status_code
                 for _ in range(30)]
    finally:
        proc.terminate()
        proc.wait(30)
    assert pages == [200] * 30
