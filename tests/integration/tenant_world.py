"""Two tenants (acme, globex) and an operator over HTTP: the world the tenant matrix tests
share (tests/integration/test_tenants.py, test_tenant_fields.py).

Each tenant's harness writes one conversation, the operator writes one for globex, and
every subject is scored under the default contract. The texts name their stream (so a
leak of one tenant's text into another's answer is visible by name).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.unit.evaluators.factories import contract_text, publish
from tests.unit.trainer_core.fixtures import RecordingDispatcher

READS = ["events:read", "rewards:read", "contracts:read", "registry:read", "audit:read",
         "lineage:read"]
KEYS = [("ops", ["admin"], None),
        ("ops-registry", ["registry:read"], None),
        ("ops-rewards", ["rewards:read"], None),
        ("acme-w", ["events:write"], "acme"),
        ("acme-r", READS, "acme"),
        ("acme-admin", ["admin"], "acme"),
        ("acme-contracts", ["contracts:read"], "acme"),
        ("acme-rewards", ["rewards:read"], "acme"),
        ("acme-compare", ["contracts:read", "rewards:read"], "acme"),
        ("globex-w", ["events:write"], "globex"),
        ("globex-r", READS, "globex")]


@dataclass
class World:
    client: TestClient
    container: Container
    keys: dict[str, dict[str, str]]
    streams: dict[str, str]  # tenant -> its conversation's stream

    def as_(self, who: str) -> dict[str, str]:
        return self.keys[who]


def conversation(stream: str, tenant: str | None = None, turns: int = 2) -> list[dict[str, Any]]:
    meta = {"specialist": "chat", "actor": "someone-else"}
    if tenant is not None:
        meta["tenant"] = tenant
    events: list[dict[str, Any]] = []
    for i in range(turns):
        events += [{"stream_id": stream, "type": "turn.user", "payload": {"text": f"q{i} of {stream}"}},
                   {"stream_id": stream, "type": "turn.assistant",
                    "payload": {"text": f"a{i} of {stream}"}}]
    events.append({"stream_id": stream, "type": "episode.completed",
                   "payload": {"outcome": "success"}})
    return [{**e, "metadata": meta} for e in events]


@pytest.fixture
def world(database_url: str, tmp_path: Path) -> Iterator[World]:
    settings = Settings(database_url=database_url, kafka_bootstrap="", data_dir=tmp_path,
                        dry_run_wait_seconds=30)
    # Training runs are recorded, not sent to a worker: the gate tests register made-up ones.
    container = Container(settings, make_engine(database_url), dispatch_to=RecordingDispatcher())
    keys: dict[str, dict[str, str]] = {}
    for who, scopes, tenant in KEYS:
        key = container.keys.create(scopes, label=who, tenant=tenant)
        keys[who] = {"Authorization": f"Bearer {key}"}
    publish(container.contracts, contract_text())
    with TestClient(create_app(container)) as client:
        streams = {t: f"{t}-{uuid.uuid4().hex[:6]}" for t in ("acme", "globex")}
        for tenant, stream in streams.items():
            created = client.post("/v1/events", json={"events": conversation(stream)},
                                  headers=keys[f"{tenant}-w"])
            assert created.status_code == 201, created.text
        # The operator writes for globex by naming it.
        streams["ops-globex"] = f"og-{uuid.uuid4().hex[:6]}"
        assert client.post("/v1/events", json={"events": conversation(streams["ops-globex"], "globex")},
                           headers=keys["ops"]).status_code == 201
        container.evaluator().drain(timeout=60)
        yield World(client, container, keys, streams)
    container.close()


def feed(world: World, who: str) -> list[dict[str, Any]]:
    return world.client.get("/v1/events?limit=5000", headers=world.as_(who)).json()["events"]
