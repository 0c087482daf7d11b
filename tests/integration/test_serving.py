"""Serving contract versions: one per specialist, moved by events, with history and ?at=,
and the harness configuration a harness polls (ETag / If-None-Match)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from typer.testing import CliRunner

from access.keys import create_key
from api.app import create_app
from cli.main import app as cli_app
from contract.versions import VersionConflict
from events.tables import events
from hcp.bootstrap import Container
from hcp.settings import Settings, get_settings
from kernel.db import make_engine
from kernel.errors import Conflict, Invalid, NotFound
from tests.unit.evaluators.factories import contract_text, publish


def with_prompt(text: str, weight: float = 1.0) -> str:
    return contract_text(answered_weight=weight).replace(
        'tool_allowlist = ["web.search"]',
        f'tool_allowlist = ["web.search"]\nprompts = {{ system = {{ text = "{text}" }} }}')


@pytest.fixture
def container(database_url: str) -> Iterator[Container]:
    built = Container(Settings(database_url=database_url, kafka_bootstrap=""), make_engine(database_url))
    yield built
    built.close()


def test_the_first_published_version_serves_and_later_ones_only_score(container: Container) -> None:
    publish(container.contracts, with_prompt("Be kind."))
    publish(container.contracts, with_prompt("Be brief.", 2.0), parent=1)
    serving = container.serving
    assert {s: m.version for s, m in serving.current("default").items()} == {"chat": 1, "coding": 1}
    assert [v.version for v in container.contracts.active()] == [1, 2]  # both score

    [moved] = serving.move("default", "coding", 2, "tester", "v2 for coding")
    assert (moved.version, moved.previous_version) == (2, 1)
    assert serving.at("default", "coding").version == 2 and serving.at("default", "chat").version == 1
    assert serving.at("default", "coding", moved.moved_at - timedelta(microseconds=1)).version == 1
    assert [m.version for m in serving.history("default", "coding")] == [2, 1]
    with container.engine.connect() as conn:
        types = list(conn.execute(select(events.c.type).where(events.c.stream_id == "contract:default")
                                  .order_by(events.c.position)).scalars())
    assert types.count("contract.serving_moved") == 3

    with pytest.raises(Conflict, match="already serves"):
        serving.move("default", "coding", 2, "tester", "again")
    with pytest.raises(Invalid, match="does not declare specialist 'genui'"):
        serving.move("default", "genui", 2, "tester", "no such slot")
    draft = container.contracts.create_draft("default", with_prompt("x"), "tester", 2)
    with pytest.raises(Conflict, match="only a published version serves"):
        serving.move("default", None, draft.version, "tester", "a draft")
    with pytest.raises(VersionConflict, match="serves chat: move serving to another published "
                                              r"version first \(chat: default@2\)"):
        container.contracts.retire("default", 1, "tester")
    assert container.contracts.get("default", 1).status == "published"  # nothing happened
    with pytest.raises(NotFound):
        serving.at("default", "coding", moved.moved_at - timedelta(days=1))


def test_retiring_the_only_version_that_declares_a_slot_stops_serving_it(container: Container) -> None:
    publish(container.contracts, with_prompt("Be kind."))
    container.contracts.retire("default", 1, "tester", "the contract is withdrawn")
    assert container.serving.current("default") == {}
    [stopped, *_] = container.serving.history("default", "chat")
    assert (stopped.version, stopped.previous_version) == (None, 1) and "retired" in stopped.reason
    with pytest.raises(NotFound, match="served 'chat' now"):
        container.serving.harness("default", "chat")


def test_the_harness_polls_its_configuration_with_an_etag(container: Container) -> None:
    publish(container.contracts, with_prompt("Be kind."))
    publish(container.contracts, with_prompt("Be brief.", 2.0), parent=1)
    client = TestClient(create_app(container))
    reader = {"Authorization": f"Bearer {create_key(container.engine, ['contracts:read'])}"}
    writer = {"Authorization": f"Bearer {create_key(container.engine, ['contracts:write'], 'w')}"}
    url = "/v1/contracts/default/serving/coding/harness"

    first = client.get(url, headers=reader)
    body = first.json()
    assert first.status_code == 200 and first.headers["etag"] == f'"{body["config_hash"]}"'
    assert body["contract"]["version"] == 1 and len(body["contract"]["content_hash"]) == 64
    assert body["prompts"]["system"]["text"] == "Be kind." and body["tools"] == ["web.search"]
    assert body["adapter"] == {"alias": "production", "adapter_id": None}
    unchanged = client.get(url, headers={**reader, "If-None-Match": first.headers["etag"]})
    assert unchanged.status_code == 304 and unchanged.content == b""

    moved = client.put("/v1/contracts/default/serving",
                       json={"version": 2, "specialist": "coding", "reason": "try v2"}, headers=writer)
    assert moved.status_code == 200 and moved.json()[0]["actor"] == "key:w"
    changed = client.get(url, headers={**reader, "If-None-Match": first.headers["etag"]})
    assert changed.status_code == 200 and changed.json()["prompts"]["system"]["text"] == "Be brief."
    listed = client.get("/v1/contracts/default/serving", headers=reader).json()
    assert {s: m["version"] for s, m in listed["serving"].items()} == {"chat": 1, "coding": 2}
    assert listed["scoring"] == [1, 2]
    assert client.get("/v1/contracts/default/serving/genui/harness", headers=reader).status_code == 404
    assert client.put("/v1/contracts/default/serving", json={"version": 9, "reason": "x"},
                      headers=writer).status_code == 404


def test_the_cli_serves_and_prints_the_configuration(sqlite_url: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HCP_DATABASE_URL", sqlite_url)
    monkeypatch.setenv("HCP_KAFKA_BOOTSTRAP", "")
    get_settings.cache_clear()
    built = Container(Settings(database_url=sqlite_url, kafka_bootstrap=""), make_engine(sqlite_url))
    publish(built.contracts, with_prompt("Be kind."))
    publish(built.contracts, with_prompt("Be brief.", 2.0), parent=1)
    built.close()
    runner = CliRunner()

    served = runner.invoke(cli_app, ["contract", "serve", "default", "2", "--reason", "all on v2"])
    assert served.exit_code == 0 and "coding: default@2 serves (was default@1)" in served.output
    listed = runner.invoke(cli_app, ["contract", "serving", "default"])
    assert "default@2" in listed.output and "scoring: default@1, default@2" in listed.output
    shown = runner.invoke(cli_app, ["contract", "harness", "default", "chat"])
    config = json.loads(shown.output)
    assert config["contract"]["version"] == 2 and config["specialist"] == "chat"
    again = runner.invoke(cli_app, ["contract", "harness", "default", "chat",
                                    "--if-none-match", config["config_hash"]])
    assert again.exit_code == 0 and again.stdout == ""
    missing = runner.invoke(cli_app, ["contract", "harness", "default", "genui"])
    assert missing.exit_code == 3 and "served 'genui'" in missing.output
    get_settings.cache_clear()
