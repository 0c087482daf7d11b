"""Integrations as a user runs them, against `hcp serve` processes and with hcp_client: a
session written with the client is scored by the server alone; webhooks reach a receiver
process across its outage and across a server killed mid-delivery, none lost, in order."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from hcp_client import Client

from tests.ports import free_port
from tests.webhooks import SECRET, distinct, received, receiver, wait_for

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
HCP = str(Path(sys.executable).parent / "hcp")
CONTRACT = (ROOT / "examples" / "contracts" / "default.toml").read_text()


@dataclass
class Server:
    env: dict[str, str]
    port: int
    key: str
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        log = open(Path(self.env["HCP_DATA_DIR"]) / "serve.log", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen([HCP, "serve", "--port", str(self.port), "--no-access-log"],
                                     env=self.env, stdout=log, stderr=subprocess.STDOUT)
        wait_for(self._healthy, 60, "hcp serve did not come up")

    def kill(self) -> None:
        """As a crash: SIGKILL, no chance to finish anything."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(60)

    def _healthy(self) -> bool:
        assert self.proc is not None and self.proc.poll() is None, "hcp serve exited"
        try:
            return httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200
        except httpx.TransportError:
            return False


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HCP_")}
    env.update(HCP_DATA_DIR=str(tmp_path / "hcp-data"), HCP_WEBHOOK_BACKOFF_S="0.2",
               HCP_WEBHOOK_BACKOFF_MAX_S="0.5", HCP_WEBHOOK_TIMEOUT_S="2",
               HCP_WEBHOOK_ALLOWED_TARGETS='["127.0.0.1/32"]',  # the receivers are on the loopback
               HCP_CONSOLE_SECRET="test-secret")
    subprocess.run([HCP, "db", "upgrade"], env=env, check=True, capture_output=True)
    made = subprocess.run([HCP, "keys", "create", "--scope", "admin"], env=env, check=True,
                          capture_output=True, text=True)
    found = Server(env, free_port(), made.stdout.strip().splitlines()[-1])
    found.start()
    yield found
    found.stop()


def publish(hcp: Client, name: str) -> None:
    draft = hcp.create_draft(name, CONTRACT.replace('name = "default"', f'name = "{name}"'))
    hcp.publish(name, draft.version)


def test_a_session_written_with_the_client_is_scored_by_the_server(server: Server) -> None:
    with Client(server.url, server.key) as hcp:
        publish(hcp, "default")
        with hcp.session(harness="client-test") as session:
            session.user("What is 2 + 2?")
            call = session.tool_call("python.run", {"code": "print(2 + 2)"})
            session.tool_result(call, ok=True, output="4")
            session.assistant("4")
            session.feedback(rating=1.0)
        rewards = wait_for(lambda: list(hcp.iter_rewards(stream_id=session.stream_id)), 60,
                           "the session was not scored")
        assert rewards[0].contract.name == "default" and 0.0 <= rewards[0].score <= 1.0
        types = [e.type for e in hcp.iter_events() if e.stream_id == session.stream_id]
        assert types == ["session.started", "turn.user", "tool.called", "tool.result",
                         "turn.assistant", "feedback.given", "episode.completed"]


def test_webhooks_lose_nothing_across_a_receiver_outage_and_a_server_crash(
        server: Server, tmp_path: Path) -> None:
    port, out = free_port(), tmp_path / "hooks.jsonl"
    with Client(server.url, server.key) as hcp:
        sub = hcp.subscribe_webhook(f"http://127.0.0.1:{port}/hook", ["contract.published"], SECRET)
        names = [f"c{i}-{uuid.uuid4().hex[:4]}" for i in range(9)]
        for name in names[:3]:  # the receiver is down
            publish(hcp, name)
        wait_for(lambda: hcp.webhook_deliveries(sub.subscription_id), 30, "no attempt recorded")
        assert {d.status for d in hcp.webhook_deliveries(sub.subscription_id)} == {"failed"}
    with receiver(port, out, delay=0.3):
        with Client(server.url, server.key) as hcp:
            for name in names[3:]:
                publish(hcp, name)
        wait_for(lambda: len(received(out)) >= 4, 60, "deliveries did not resume")
        server.kill()  # mid-delivery: the receiver takes 0.3 s per request
        assert len(distinct(out)) < len(names)
        server.start()
        got = wait_for(lambda: len(distinct(out)) == len(names) and distinct(out), 90,
                       "deliveries lost across the crash")
    assert [g["body"]["data"]["payload"]["name"] for g in got] == names  # log order
    assert all(g["valid"] for g in received(out))
