"""A hostile receiver: one that answers with internal pages (to read them back through the
deliveries list), with a body too big to hold, a byte at a time, or never; that sits
behind another tenant's subscription to hold its deliveries; and a subscriber that asks
for the same delivery hundreds of times."""

from __future__ import annotations

import socket
import time
import tracemalloc
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from tests.ports import free_port
from tests.redteam.webhook_world import TIMEOUT_S, Hooks, world
from tests.webhooks import distinct, received, receiver, wait_for

pytestmark = pytest.mark.slow
PAGE = "<html>internal admin page: db password hunter2</html>"


@pytest.fixture
def hooks(postgres_url: str, tmp_path: Path) -> Iterator[Hooks]:
    with world(postgres_url, tmp_path) as made:
        yield made


def tenant_view(delivery: dict) -> dict:
    """A delivery as the tenant sees it, without what differs from one attempt to the next."""
    return {k: v for k, v in delivery.items()
            if k not in ("delivery_id", "subscription_id", "event_id", "position", "created_at",
                         "finished_at")}


def test_the_receivers_answer_is_never_shown_to_the_subscriber(hooks: Hooks, tmp_path: Path) -> None:
    port, out = free_port(), tmp_path / "got.jsonl"
    with receiver(port, out, status=500, body=PAGE):
        sub = hooks.subscribed("acme", f"http://127.0.0.1:{port}/")
        hooks.publish()
        wait_for(lambda: received(out) and hooks.deliveries("acme", sub), 20, "no attempt")
    shown = hooks.client.get(f"/v1/webhooks/{sub}/deliveries", headers=hooks.keys["acme"]).text
    listed = hooks.client.get(f"/v1/webhooks/{sub}", headers=hooks.keys["acme"]).text
    for text in (shown, listed):
        assert "hunter2" not in text and "admin page" not in text and "500" not in text


def test_unreachable_receivers_all_read_the_same(hooks: Hooks, tmp_path: Path) -> None:
    """A closed port, a port that accepts and never answers, and a receiver answering 404:
    the tenant sees one outcome for all three, with nothing timed (no port-scan oracle)."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    answering, out = free_port(), tmp_path / "got.jsonl"
    targets = {"closed": free_port(), "silent": silent.getsockname()[1], "answering": answering}
    with receiver(answering, out, status=404, body="Not Found: /internal"):
        subs = {name: hooks.subscribed("acme", f"http://127.0.0.1:{port}/")
                for name, port in targets.items()}
        hooks.publish()
        firsts = {name: wait_for(lambda s=sub: hooks.deliveries("acme", s), 20, f"no attempt: {name}")[-1]
                  for name, sub in subs.items()}
    silent.close()
    views = [tenant_view(d) for d in firsts.values()]
    assert views[0]["status"] == "failed" and views[0]["duration_ms"] is None
    assert views[0]["response_status"] is None
    assert views[1:] == views[:-1], views


def test_a_failed_attempt_is_not_recorded_before_its_deadline(hooks: Hooks) -> None:
    """A refused connection fails at once; its outcome still waits for the deadline, so
    the time from a redelivery request to its outcome tells a closed port from a filtered one
    by nothing."""
    sub = hooks.subscribed("acme", f"http://127.0.0.1:{free_port()}/")
    hooks.publish()
    first = wait_for(lambda: hooks.deliveries("acme", sub), 20, "no attempt")[-1]
    asked = hooks.client.post(f"/v1/webhooks/{sub}/deliveries/{first['delivery_id']}/redeliver",
                              headers=hooks.keys["acme"])
    assert asked.status_code == 202, asked.text

    def finished() -> dict | None:
        mine = [d for d in hooks.deliveries("acme", sub) if d["delivery_id"] == asked.json()["delivery_id"]]
        return mine[0] if mine and mine[0]["status"] != "queued" else None

    done = wait_for(finished, 20, "redelivery not sent")
    took = (datetime.fromisoformat(done["finished_at"]) - datetime.fromisoformat(done["created_at"]))
    assert took.total_seconds() >= TIMEOUT_S * 0.95


def test_a_huge_answer_is_not_read(hooks: Hooks, tmp_path: Path) -> None:
    port, out = free_port(), tmp_path / "got.jsonl"
    with receiver(port, out, body_bytes=100 << 20):
        sub = hooks.subscribed("acme", f"http://127.0.0.1:{port}/")
        tracemalloc.start()
        try:
            hooks.publish()
            wait_for(lambda: hooks.deliveries("acme", sub), 30, "no attempt")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 24 << 20, f"{peak / 2**20:.0f} MiB held"
    assert hooks.deliveries("acme", sub)[-1]["status"] == "succeeded"


def test_a_drip_fed_answer_is_cut_at_the_deadline(hooks: Hooks, tmp_path: Path) -> None:
    port, out = free_port(), tmp_path / "got.jsonl"
    with receiver(port, out, drip=0.2):
        sub = hooks.subscribed("acme", f"http://127.0.0.1:{port}/")
        hooks.publish()
        wait_for(lambda: received(out), 20, "nothing sent")
        started = time.monotonic()
        first = wait_for(lambda: hooks.deliveries("acme", sub), TIMEOUT_S + 10, "the attempt never ended")
        assert time.monotonic() - started < TIMEOUT_S + 2
    assert first[-1]["status"] == "failed"


def test_a_slow_receiver_does_not_hold_another_tenants_delivery(hooks: Hooks, tmp_path: Path) -> None:
    slow, slow_out = free_port(), tmp_path / "slow.jsonl"
    fast, fast_out = free_port(), tmp_path / "fast.jsonl"
    with receiver(slow, slow_out, drip=0.2), receiver(fast, fast_out):
        hooks.subscribed("acme", f"http://127.0.0.1:{slow}/")  # first in every order
        hooks.subscribed("globex", f"http://127.0.0.1:{fast}/")
        hooks.publish()
        wait_for(lambda: received(slow_out), 20, "the slow receiver was not reached")
        held_from = time.monotonic()
        wait_for(lambda: received(fast_out), TIMEOUT_S * 4, "the other tenant's delivery waited")
        assert time.monotonic() - held_from < TIMEOUT_S, "waited behind the slow receiver"


def test_redelivery_requests_do_not_multiply_posts(hooks: Hooks, tmp_path: Path) -> None:
    port, out = free_port(), tmp_path / "got.jsonl"
    with receiver(port, out):
        sub = hooks.subscribed("acme", f"http://127.0.0.1:{port}/")
        hooks.publish()
        first = wait_for(lambda: hooks.deliveries("acme", sub), 20, "no delivery")[-1]
        url = f"/v1/webhooks/{sub}/deliveries/{first['delivery_id']}/redeliver"
        answers = [hooks.client.post(url, headers=hooks.keys["acme"]) for _ in range(200)]
        time.sleep(3)  # what was queued is sent by now
        posts = len(received(out))
    codes = {a.status_code for a in answers}
    assert codes <= {202, 429} and 429 in codes
    limited = next(a for a in answers if a.status_code == 429)
    assert int(limited.headers["retry-after"]) > 0
    assert posts <= 1 + 5, f"{posts} POSTs for 200 requests"  # the first, and the hour's 5
    assert len(distinct(out)) == 1


def test_a_tenant_cannot_open_lanes_without_bound(postgres_url: str, tmp_path: Path) -> None:
    """Each subscription is a lane of the deliverer: a tenant has a bounded number of them,
    and deleting one frees its place."""
    with world(postgres_url, tmp_path, deliver=False, webhook_max_subscriptions=3) as hooks:
        made = [hooks.subscribe("acme", f"http://93.184.215.{i}/") for i in range(1, 5)]
        assert [m.status_code for m in made] == [201, 201, 201, 409]
        assert hooks.subscribe("globex", "http://93.184.215.9/").status_code == 201  # its own bound
        first = made[0].json()["subscription_id"]
        assert hooks.client.delete(f"/v1/webhooks/{first}", headers=hooks.keys["acme"]).status_code == 200
        assert hooks.subscribe("acme", "http://93.184.215.5/").status_code == 201
