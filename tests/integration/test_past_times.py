"""Every past-time answer reads the log up to that time: the serving route and command,
the harness configuration, the alias and lineage as-of all agree on what held at T, even
when T is followed by a new version, a retirement and moves of serving and an alias."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from access.keys import create_key
from api.app import create_app
from hcp.bootstrap import Container
from hcp.settings import get_settings
from kernel.clock import utcnow
from tests.integration.cli import hcp
from tests.integration.test_serving import with_prompt
from tests.unit.evaluators.factories import publish
from tests.unit.trainer_core import fixtures
from tests.unit.trainer_core.factories import seed_dataset
from tests.unit.trainer_core.fixtures import fake_model_dir, fake_train

container, parts, recorder = fixtures.container, fixtures.parts, fixtures.recorder


@pytest.fixture
def the_cli(parts: Container, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("HCP_DATABASE_URL", parts.settings.database_url)
    monkeypatch.setenv("HCP_DATA_DIR", str(parts.settings.data_dir))
    monkeypatch.delenv("HCP_KAFKA_BOOTSTRAP", raising=False)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def two_adapters(parts: Container, content_hash: str, tmp_path) -> tuple[str, str]:
    seed_dataset(parts.engine, parts.store, "coding", contract=("default", 1, content_hash))
    parts.registry.register_base_model("tiny", fake_model_dir(tmp_path / "base"), "tester")
    made = [fake_train(parts, parts.triggers.fire_manual("coding", "t", f"v{i}", parent="root",
                                                         force=True).run_id,
                       content=f"adapter {i}".encode()).adapter_id for i in range(2)]
    return made[0], made[1]


def after_t(parts: Container, second: str) -> None:
    """v2 published and serving everything, v1 retired, production moved to ``second``."""
    publish(parts.contracts, with_prompt("Be brief.", 2.0), parent=1)
    parts.serving.move("default", None, 2, "tester", "all on v2")
    parts.contracts.retire("default", 1, "tester", "superseded")
    parts.aliases.move("coding", "production", second, "tester", "better")


def test_every_answer_at_a_past_time_is_what_held_then(parts: Container, tmp_path, the_cli) -> None:
    one = publish(parts.contracts, with_prompt("Be kind."))
    first, second = two_adapters(parts, one.content_hash, tmp_path)
    parts.aliases.move("coding", "production", first, "tester", "launch")
    then: datetime = utcnow()
    after_t(parts, second)
    client = TestClient(create_app(parts))
    key = create_key(parts.engine, ["contracts:read", "lineage:read", "registry:read"])
    auth = {"Authorization": f"Bearer {key}"}
    at = quote(then.isoformat())

    past = client.get(f"/v1/contracts/default/serving?at={at}", headers=auth).json()
    assert past["scoring"] == [1]
    assert {s: m["version"] for s, m in past["serving"].items()} == {"chat": 1, "coding": 1}
    now = client.get("/v1/contracts/default/serving", headers=auth).json()
    assert now["scoring"] == [2]
    assert {s: m["version"] for s, m in now["serving"].items()} == {"chat": 2, "coding": 2}

    printed = json.loads(hcp("contract", "serving", "default", "--at", then.isoformat(), "--json"))
    assert printed["scoring"] == [1]
    assert {s: m["version"] for s, m in printed["serving"].items()} == {"chat": 1, "coding": 1}
    assert json.loads(hcp("contract", "serving", "default", "--json"))["scoring"] == [2]

    harness = client.get(f"/v1/contracts/default/serving/coding/harness?at={at}", headers=auth).json()
    assert harness["contract"]["version"] == 1 and harness["adapter"]["adapter_id"] == first
    assert client.get("/v1/contracts/default/serving/coding/harness",
                      headers=auth).json()["adapter"]["adapter_id"] == second

    for as_of in (parts.as_of.at(then).model_dump(mode="json"),
                  client.get(f"/v1/lineage/as-of?at={at}", headers=auth).json(),
                  json.loads(hcp("lineage", "as-of", then.isoformat(), "--json"))):
        assert [(c["name"], c["version"]) for c in as_of["contracts"]] == [("default", 1)]
        assert [(a["alias"], a["adapter_id"]) for a in as_of["aliases"]] == [("production", first)]
    today = parts.as_of.at(utcnow())
    assert [(c.name, c.version) for c in today.contracts] == [("default", 2)]
    assert [a.adapter_id for a in today.aliases] == [second]
    alias = client.get(f"/v1/specialists/coding/aliases/production?at={at}", headers=auth).json()
    assert alias["adapter_id"] == first
