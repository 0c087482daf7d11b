"""Two tenants with webhook keys, an operator, and (for most attacks) the deliverer running:
the world the webhook attacks share. Receivers are processes on the loopback, which the
operator allows (``HCP_WEBHOOK_ALLOWED_TARGETS``) as it would allow a named internal
receiver; the attacks on the allowlist itself use a world without one."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from fastapi.testclient import TestClient

from api.app import create_app
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.unit.evaluators.factories import contract_text, publish
from tests.unit.trainer_core.fixtures import RecordingDispatcher
from tests.webhooks import SECRET

LOOPBACK = ["127.0.0.1/32"]
TIMEOUT_S = 2.0  # each attempt's whole deadline in these worlds
HOOKS = ["webhooks:read", "webhooks:write", "registry:read", "contracts:read"]
KEYS = [("ops", ["admin"], None),
        ("acme", HOOKS, "acme"), ("acme-w", ["events:write"], "acme"),
        ("globex", HOOKS, "globex"), ("globex-w", ["events:write"], "globex")]


@dataclass
class Hooks:
    client: TestClient
    container: Container
    keys: dict[str, dict[str, str]]

    def subscribe(self, who: str, url: str, types: list[str] | None = None) -> httpx.Response:
        return self.client.post("/v1/webhooks", headers=self.keys[who], json={
            "url": url, "event_types": types or ["contract.published"], "secret": SECRET})

    def subscribed(self, who: str, url: str, types: list[str] | None = None) -> str:
        made = self.subscribe(who, url, types)
        assert made.status_code == 201, made.text
        return str(made.json()["subscription_id"])

    def deliveries(self, who: str, subscription_id: str) -> list[dict[str, Any]]:
        got = self.client.get(f"/v1/webhooks/{subscription_id}/deliveries", headers=self.keys[who])
        assert got.status_code == 200, got.text
        return list(got.json()["deliveries"])

    def publish(self, name: str = "") -> None:
        name = name or f"c{uuid.uuid4().hex[:6]}"
        publish(self.container.contracts, contract_text(name=name), name=name)


def settings(database_url: str, data_dir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url, "kafka_bootstrap": "", "redis_url": "", "data_dir": data_dir,
        "models_dir": data_dir / "models", "webhook_backoff_s": 0.2, "webhook_backoff_max_s": 0.5,
        "webhook_max_attempts": 50, "webhook_timeout_s": TIMEOUT_S,
        "webhook_allowed_targets": LOOPBACK, "webhook_redeliveries_per_hour": 5, **overrides}
    return Settings(**values)


@contextmanager
def world(database_url: str, data_dir: Path, deliver: bool = True,
          **overrides: Any) -> Iterator[Hooks]:
    config = settings(database_url, data_dir, **overrides)
    container = Container(config, make_engine(database_url), dispatch_to=RecordingDispatcher())
    run = uuid.uuid4().hex[:6]  # labels are unique per database; two worlds may share one
    keys = {who: {"Authorization": "Bearer " + container.keys.create(
        scopes, label=f"{who}-{run}", tenant=tenant)} for who, scopes, tenant in KEYS}
    with TestClient(create_app(container)) as client, delivering(container, deliver):
        yield Hooks(client, container, keys)
    container.close()


@contextmanager
def delivering(container: Container, deliver: bool = True) -> Iterator[None]:
    """The container's deliverer in a thread, as ``hcp serve`` runs it."""
    if not deliver:
        yield
        return
    stop = threading.Event()
    thread = threading.Thread(target=container.integrations.deliver, args=(stop,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(30)
