"""A tenant's webhook as a server-side request forgery: a subscription that makes the server
POST to itself, its network or the cloud's metadata service, in any spelling of the
address, and a target that was allowed when made but is not when sent to."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from integrations.webhooks.events import WebhookSubscribed
from tests.ports import free_port
from tests.redteam.webhook_world import Hooks, delivering, world
from tests.webhooks import received, receiver, wait_for

# Each names the loopback, this host, a private, shared or link-local network, or no
# unicast host at all: the spellings an attacker tries after the obvious one is refused.
INTERNAL = [
    "http://127.0.0.1/", "http://127.0.0.1:5432/", "https://127.0.0.1:8443/hook",
    "http://localhost/", "http://LocalHost:8000/", "http://localhost./", "http://LOCALHOST./",
    "http://[::1]/", "http://[0:0:0:0:0:0:0:1]:80/", "http://2130706433/", "http://0x7f000001/",
    "http://0x7f.1/", "http://0177.0.0.1/", "http://127.1/", "http://127.0.0.1./",
    "http://0.0.0.0/", "http://0/", "http://[::]/", "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/", "http://[::127.0.0.1]/", "http://[64:ff9b::127.0.0.1]/",
    "http://[2002:7f00:1::]/", "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
    "http://10.0.0.1/", "http://172.16.0.1/", "http://192.168.0.1/", "http://100.64.0.1/",
    "http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://[fc00::1]/",
    "http://[fe80::1]/", "http://[fe80::1%25eth0]/", "http://224.0.0.1/", "http://[ff02::1]/",
    "http://255.255.255.255/", "http://198.18.0.1/", "http://240.0.0.1/",
    "http://no-such-host.invalid/",
]


@pytest.fixture
def strict(postgres_url: str, tmp_path: Path) -> Iterator[Hooks]:
    """A server whose operator allows no internal receiver (the default)."""
    with world(postgres_url, tmp_path, deliver=False, webhook_allowed_targets=[]) as made:
        yield made


def test_no_internal_target_is_accepted_in_any_spelling(strict: Hooks) -> None:
    answers = {url: strict.subscribe("acme", url) for url in INTERNAL}
    for url, answer in answers.items():
        assert answer.status_code == 422, (url, answer.text)
        assert answer.json()["error"]["field"] == "url", url
    # One message for all: no answer tells a name that resolves from one that does not,
    # nor which internal address a name has.
    assert len({a.json()["error"]["message"] for a in answers.values()}) == 1
    assert strict.subscribe("ops", "http://127.0.0.1:9/").status_code == 422  # operators too
    assert strict.client.get("/v1/webhooks", headers=strict.keys["ops"]).json()["webhooks"] == []
    assert strict.container.store.of_types([WebhookSubscribed.TYPE]) == []


def test_a_public_address_is_accepted_without_being_contacted(strict: Hooks) -> None:
    for url in ("http://93.184.215.14/hook", "https://[2606:4700:4700::1111]:8443/h"):
        assert strict.subscribe("acme", url).status_code == 201, url


def test_an_allowed_target_is_checked_again_when_sent_to(postgres_url: str, tmp_path: Path) -> None:
    """Allowed when made, then the operator narrowed the allowlist: the deliverer refuses it
    at connection and the receiver hears nothing."""
    port, out = free_port(), tmp_path / "got.jsonl"
    with world(postgres_url, tmp_path, deliver=False) as allowed:
        sub = allowed.subscribed("acme", f"http://127.0.0.1:{port}/")
        with world(postgres_url, tmp_path, webhook_allowed_targets=[]) as narrowed, \
                receiver(port, out):
            narrowed.publish()
            failed = wait_for(lambda: narrowed.deliveries("acme", sub), 20, "no attempt recorded")
            assert failed[0]["status"] == "failed"
            assert received(out) == []


def test_a_redirect_to_an_internal_address_is_not_followed(tmp_path: Path, postgres_url: str) -> None:
    port, out = free_port(), tmp_path / "got.jsonl"
    inner, inner_out = free_port(), tmp_path / "inner.jsonl"
    with world(postgres_url, tmp_path) as hooks, receiver(inner, inner_out), \
            receiver(port, out, redirect=f"http://127.0.0.1:{inner}/admin"):
        sub = hooks.subscribed("acme", f"http://127.0.0.1:{port}/")
        hooks.publish()
        wait_for(lambda: hooks.deliveries("acme", sub), 20, "no attempt recorded")
    assert hooks.deliveries("acme", sub)[0]["status"] == "failed"
    assert len(received(out)) >= 1 and received(inner_out) == []


def test_the_deliverer_alone_sends_to_the_same_database(postgres_url: str, tmp_path: Path) -> None:
    """Two deliverers over one database (an API process and `hcp webhooks deliver`): one
    sends, the other stands by, so a redelivery is not doubled by a second sender."""
    port, out = free_port(), tmp_path / "got.jsonl"
    with world(postgres_url, tmp_path) as first, receiver(port, out), delivering(first.container):
        sub = first.subscribed("acme", f"http://127.0.0.1:{port}/")
        first.publish()
        wait_for(lambda: received(out), 20, "nothing delivered")
        assert len({r["id"] for r in received(out)}) == len(received(out)) == 1
        assert len(first.deliveries("acme", sub)) == 1
