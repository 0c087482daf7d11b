"""API key lifecycle on SQLite and PostgreSQL: tenants, expiry, revocation, last use, events."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from typer.testing import CliRunner

from access.keys import ApiKeys, KeyConflict, UnknownScope
from api.app import create_app
from events.tables import events
from hcp.bootstrap import Container
from hcp.settings import Settings, get_settings
from kernel.clock import utcnow
from kernel.db import make_engine
from kernel.errors import Invalid


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def container(database_url: str, tmp_path: Path) -> Iterator[Container]:
    built = Container(Settings(database_url=database_url, kafka_bootstrap="", data_dir=tmp_path),
                      make_engine(database_url))
    yield built
    built.close()


def test_creation_and_revocation_are_events_without_the_secret(container: Container) -> None:
    keys = container.keys
    key = keys.create(["events:read"], label="reader", tenant="acme", actor="cli:alice")
    key_id, secret = key.split("_")[1], key.split("_", 2)[2]
    keys.revoke(key_id, "cli:bob", "left the team")

    stream = container.store.read_stream(f"api_key:{key_id}")
    assert [(e.type, e.metadata.actor, e.metadata.tenant) for e in stream] == [
        ("api_key.created", "cli:alice", None), ("api_key.revoked", "cli:bob", None)]
    assert stream[0].payload["tenant"] == "acme" and stream[0].payload["scopes"] == ["events:read"]
    assert stream[1].payload == {"key_id": key_id, "reason": "left the team"}
    with container.engine.connect() as conn:
        payloads = [str(p) for p in conn.execute(select(events.c.payload))]
    assert not any(secret in p for p in payloads)
    [info] = keys.all_keys()
    assert (info.revoked_by, info.revoked_reason, info.tenant) == ("cli:bob", "left the team", "acme")
    with pytest.raises(KeyConflict):
        keys.revoke(key_id, "cli:bob")


def test_bad_keys_are_refused_at_creation(container: Container) -> None:
    container.keys.create(["admin"], label="ops")
    with pytest.raises(UnknownScope):
        container.keys.create(["events:readd"])
    with pytest.raises(KeyConflict):
        container.keys.create(["events:read"], label="ops")  # labels name the actor: unique
    with pytest.raises(Invalid):
        container.keys.create(["events:read"], expires_at=utcnow() - timedelta(seconds=1))


def test_a_revoked_key_is_refused_here_at_once_and_elsewhere_within_the_ttl(container: Container) -> None:
    clock = Clock()
    here = ApiKeys(container.engine, container.store, cache_ttl_s=5, monotonic=clock)
    elsewhere = ApiKeys(container.engine, container.store, cache_ttl_s=5, monotonic=clock)
    key = here.create(["events:read"], tenant="acme")
    key_id = key.split("_")[1]
    principal = elsewhere.authenticate(key)
    assert principal is not None and (principal.tenant, principal.operator) == ("acme", False)

    here.revoke(key_id, "test")
    assert here.authenticate(key) is None
    assert elsewhere.authenticate(key) is not None  # still cached: no SQL per request
    clock.now += 5
    assert elsewhere.authenticate(key) is None


def test_an_expired_key_is_refused_even_from_the_cache(container: Container) -> None:
    keys = container.keys
    key = keys.create(["events:read"], expires_at=utcnow() + timedelta(seconds=1))
    assert keys.authenticate(key) is not None
    [info] = keys.all_keys()
    assert not info.usable(utcnow() + timedelta(seconds=2))
    assert info.usable(utcnow())


def test_last_use_is_written_at_most_once_a_minute(container: Container) -> None:
    clock = Clock()
    keys = ApiKeys(container.engine, container.store, cache_ttl_s=0, monotonic=clock)
    key = keys.create(["events:read"])
    assert keys.all_keys()[0].last_used_at is None
    keys.authenticate(key)
    first = keys.all_keys()[0].last_used_at
    assert first is not None
    clock.now += 30
    keys.authenticate(key)
    assert keys.all_keys()[0].last_used_at == first
    clock.now += 31
    keys.authenticate(key)
    assert keys.all_keys()[0].last_used_at > first


def test_a_revoked_key_gets_401_over_http(container: Container) -> None:
    key = container.keys.create(["events:read"])
    with TestClient(create_app(container)) as client:
        headers = {"Authorization": f"Bearer {key}"}
        assert client.get("/v1/events", headers=headers).status_code == 200
        container.keys.revoke(key.split("_")[1], "test")
        assert client.get("/v1/events", headers=headers).status_code == 401


def test_the_cli_creates_lists_and_revokes(database_url: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from cli.main import app as cli

    monkeypatch.setenv("HCP_DATABASE_URL", database_url)
    monkeypatch.setenv("HCP_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("HCP_KAFKA_BOOTSTRAP", raising=False)
    get_settings.cache_clear()
    runner = CliRunner()
    try:
        created = runner.invoke(cli, ["keys", "create", "-s", "events:read", "--label", "bot",
                                      "--tenant", "acme", "--expires-in", "30d"])
        assert created.exit_code == 0, created.output
        key_id = created.output.strip().splitlines()[-1].split("_")[1]
        [listed] = [json.loads(line) for line in
                    runner.invoke(cli, ["keys", "list", "--json"]).output.splitlines()]
        assert (listed["key_id"], listed["tenant"], listed["revoked_at"]) == (key_id, "acme", None)
        assert listed["expires_at"] is not None and "active" in runner.invoke(cli, ["keys", "list"]).output
        revoked = runner.invoke(cli, ["keys", "revoke", key_id, "--reason", "rotated"])
        assert revoked.exit_code == 0, revoked.output
        assert "revoked" in runner.invoke(cli, ["keys", "list"]).output
        again = runner.invoke(cli, ["keys", "revoke", key_id])
        assert again.exit_code == 4 and "revoked" in again.output
        bad = runner.invoke(cli, ["keys", "create", "-s", "events:read", "--expires-in", "soon"])
        assert bad.exit_code == 2
    finally:
        get_settings.cache_clear()


def test_the_answer_without_io_is_authenticates_or_none(container: Container) -> None:
    """The gate's event-loop shortcut never admits what ``authenticate`` would refuse, and
    defers (None) whenever the database has a say: not cached, cache stale, last use due."""
    clock = Clock()
    keys = ApiKeys(container.engine, container.store, cache_ttl_s=5, monotonic=clock)
    key = keys.create(["events:read"], tenant="acme")
    assert keys.authenticate_without_io(key) is None  # not cached yet
    principal = keys.authenticate(key)
    assert principal is not None and keys.authenticate_without_io(key) == principal
    assert keys.authenticate_without_io(key[:-1] + ("x" if key[-1] != "x" else "y")) is None
    assert keys.authenticate_without_io("hcp_nonsense") is None
    clock.now += 5  # cache stale: the database decides again
    assert keys.authenticate_without_io(key) is None
    assert keys.authenticate(key) == principal
    clock.now += 61  # stale again, and the last use due to be written: authenticate decides
    assert keys.authenticate_without_io(key) is None
    keys.revoke(key.split("_")[1], "test")
    assert keys.authenticate_without_io(key) is None and keys.authenticate(key) is None
