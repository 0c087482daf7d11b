"""Webhooks against a real receiver process: subscriptions in the log, signed deliveries in
log order, every event after a receiver outage, disabling, enabling and redelivery."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from contract.events import Published
from hcp.bootstrap import Container
from hcp.settings import Settings
from integrations.webhooks.events import WebhookDisabled, WebhookSubscribed
from kernel.db import make_engine
from tests.ports import free_port
from tests.unit.evaluators.factories import contract_text, publish
from tests.webhooks import SECRET, distinct, received, receiver, wait_for


@pytest.fixture
def container(database_url: str, tmp_path: Path) -> Iterator[Container]:
    settings = Settings(database_url=database_url, kafka_bootstrap="", data_dir=tmp_path,
                        webhook_backoff_s=0.2, webhook_backoff_max_s=0.5, webhook_max_attempts=4,
                        webhook_timeout_s=2, webhook_allowed_targets=["127.0.0.1/32"])
    c = Container(settings, make_engine(database_url))
    yield c
    c.close()


@pytest.fixture
def client(container: Container) -> Iterator[TestClient]:
    with TestClient(create_app(container)) as made:
        yield made


def key(container: Container, scopes: list[str], tenant: str | None = None) -> dict[str, str]:
    made = container.keys.create(scopes, label=f"k-{uuid.uuid4().hex[:6]}", tenant=tenant)
    return {"Authorization": f"Bearer {made}"}


def subscribe(client: TestClient, headers: dict[str, str], url: str, types: list[str],
              secret: str = SECRET, **extra: object) -> dict:
    answer = client.post("/v1/webhooks", headers=headers,
                         json={"url": url, "event_types": types, "secret": secret, **extra})
    assert answer.status_code == 201, answer.text
    return answer.json()


@pytest.fixture
def delivering(container: Container) -> Iterator[None]:
    stop = threading.Event()
    thread = threading.Thread(target=container.integrations.deliver, args=(stop,), daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(30)


def test_a_subscription_is_an_event_and_its_secret_never_comes_back(
        client: TestClient, container: Container) -> None:
    ops = key(container, ["admin"])
    made = subscribe(client, ops, "http://127.0.0.1:9/hook", [Published.TYPE])
    assert "secret" not in made and SECRET not in str(made)
    listed = client.get("/v1/webhooks", headers=ops).json()["webhooks"]
    assert [w["subscription_id"] for w in listed] == [made["subscription_id"]]
    (event,) = container.store.of_types([WebhookSubscribed.TYPE])
    assert event.payload["url"] == "http://127.0.0.1:9/hook"
    assert SECRET not in str(event.payload) and SECRET[6:] not in str(event.payload)
    deleted = client.delete(f"/v1/webhooks/{made['subscription_id']}", headers=ops)
    assert (deleted.status_code, deleted.json()["status"]) == (200, "deleted")
    assert client.get(f"/v1/webhooks/{made['subscription_id']}", headers=ops).status_code == 404



def test_bad_subscriptions_are_refused_naming_the_field(client: TestClient, container: Container) -> None:
    ops = key(container, ["admin"])
    for body, field in (({"url": "ftp://x/", "event_types": [Published.TYPE]}, "url"),
                        ({"url": "http://x/", "event_types": ["turn.user"]}, "event_types"),
                        ({"url": "http://x/", "event_types": [Published.TYPE],
                          "secret": "whsec_not base64 at all!!!!!"}, "secret")):
        answer = client.post("/v1/webhooks", headers=ops, json={"secret": SECRET, **body})
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"]["field"] == field
        assert "not base64 at all" not in answer.text
    assert client.get("/v1/webhooks", headers=ops).json()["webhooks"] == []


def test_tenants_subscribe_for_themselves_and_only_to_what_they_may_read(
        client: TestClient, container: Container) -> None:
    acme = key(container, ["webhooks:write", "webhooks:read", "contracts:read"], "acme")
    globex = key(container, ["webhooks:read"], "globex")
    made = subscribe(client, acme, "http://127.0.0.1:9/", [Published.TYPE])
    assert made["tenant"] == "acme"
    assert client.post("/v1/webhooks", headers=acme, json={
        "url": "http://x/", "event_types": ["audit.failed"], "secret": SECRET}).status_code == 403
    assert client.post("/v1/webhooks", headers=acme, json={
        "url": "http://x/", "event_types": [Published.TYPE], "secret": SECRET,
        "tenant": "globex"}).status_code == 403
    assert client.get("/v1/webhooks", headers=globex).json()["webhooks"] == []
    assert client.get(f"/v1/webhooks/{made['subscription_id']}", headers=globex).status_code == 404


def test_every_event_arrives_in_order_after_the_receiver_was_down(
        client: TestClient, container: Container, delivering: None, tmp_path: Path) -> None:
    port, out = free_port(), tmp_path / "got.jsonl"
    ops = key(container, ["admin"])
    made = subscribe(client, ops, f"http://127.0.0.1:{port}/hook", [Published.TYPE])
    for i in range(3):  # the receiver is not listening yet
        publish(container.contracts, contract_text(name=f"c{i}"), name=f"c{i}")
    deliveries = f"/v1/webhooks/{made['subscription_id']}/deliveries"
    wait_for(lambda: client.get(deliveries, headers=ops).json()["deliveries"], 20, "no attempt")
    failed = client.get(deliveries, headers=ops).json()["deliveries"]
    assert {d["status"] for d in failed} == {"failed"} and failed[0]["response_status"] is None
    with receiver(port, out):
        for i in range(3, 5):
            publish(container.contracts, contract_text(name=f"c{i}"), name=f"c{i}")
        got = wait_for(lambda: len(distinct(out)) >= 5 and distinct(out), 60, "deliveries missing")
    names = [g["body"]["data"]["payload"]["name"] for g in got]
    assert names == [f"c{i}" for i in range(5)]  # log order
    assert all(g["valid"] for g in received(out))
    positions = [g["body"]["data"]["position"] for g in got]
    assert positions == sorted(positions)
    ok = [d for d in client.get(deliveries, headers=ops).json()["deliveries"] if d["status"] == "succeeded"]
    assert len(ok) >= 5 and all(d["response_status"] == 200 for d in ok)


def test_a_wrong_secret_is_detected_by_the_receiver(
        client: TestClient, container: Container, delivering: None, tmp_path: Path) -> None:
    port, out = free_port(), tmp_path / "got.jsonl"
    ops = key(container, ["admin"])
    subscribe(client, ops, f"http://127.0.0.1:{port}/", [Published.TYPE],
              secret="whsec_" + "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB")  # not the receiver's
    with receiver(port, out):
        publish(container.contracts, contract_text(name="w"), name="w")
        got = wait_for(lambda: received(out), 30, "nothing delivered")
    assert got[0]["valid"] is False


def test_repeated_failures_disable_then_enable_resumes_and_redelivery_resends(
        client: TestClient, container: Container, delivering: None, tmp_path: Path) -> None:
    port, out = free_port(), tmp_path / "got.jsonl"
    ops = key(container, ["admin"])
    made = subscribe(client, ops, f"http://127.0.0.1:{port}/", [Published.TYPE])
    path = f"/v1/webhooks/{made['subscription_id']}"
    with receiver(port, out, status=500):
        publish(container.contracts, contract_text(name="d"), name="d")
        wait_for(lambda: client.get(path, headers=ops).json()["status"] == "disabled", 30,
                 "not disabled after repeated failures")
    (disabled,) = container.store.of_types([WebhookDisabled.TYPE])
    assert disabled.payload["failures"] == 4
    assert len(received(out)) == 4  # max attempts, then no more
    with receiver(port, out):
        assert client.post(f"{path}/enable", headers=ops).status_code == 200
        wait_for(lambda: len(received(out)) == 5, 30, "not resumed after enabling")
        first = client.get(f"{path}/deliveries", headers=ops).json()["deliveries"][0]
        again = client.post(f"{path}/deliveries/{first['delivery_id']}/redeliver", headers=ops)
        assert again.status_code == 202 and again.json()["status"] == "queued"
        wait_for(lambda: len(received(out)) == 6, 30, "not redelivered")
    assert received(out)[-1]["id"] == received(out)[-2]["id"]  # the same message, again
