"""A hostile client against the failed-authentication throttle: key ids are not secret
(the key's prefix, actors in delivered events), so failures naming one must not lock its
owner out, and guessing must still cost the guesser, not the database."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import event

from access.keys import IDS_EVERY_S, create_key
from api.app import create_app
from hcp.bootstrap import Container, bootstrap
from hcp.settings import Settings


@pytest.fixture
def gated(sqlite_url: str, tmp_path: Path) -> Iterator[tuple[FastAPI, Container]]:
    settings = Settings(database_url=sqlite_url, data_dir=tmp_path, auth_failure_burst=3,
                        auth_failure_per_second=0.01)
    container = bootstrap(settings)
    yield create_app(container), container
    container.close()


def _get(app: FastAPI, address: str, key: str) -> int:
    client = TestClient(app, client=(address, 1))
    return client.get("/v1/events", headers={"Authorization": f"Bearer {key}"}).status_code


def test_failures_naming_a_key_id_from_elsewhere_do_not_lock_its_owner_out(gated) -> None:
    app, container = gated
    owner = create_key(container.engine, ["admin"])
    key_id = owner.split("_")[1]
    attacks = [_get(app, f"10.9.0.{i}", f"hcp_{key_id}_guess{i}") for i in range(10)]
    assert attacks[-1] == 429  # the key id's allowance is spent
    assert _get(app, "10.9.1.1", owner) == 200  # its owner, with the right secret


def test_an_owner_behind_an_address_that_spent_its_allowance_still_gets_in(gated) -> None:
    app, container = gated
    owner = create_key(container.engine, ["events:read"])
    attacks = [_get(app, "10.9.2.1", f"hcp_{i:016x}_guess") for i in range(10)]
    assert attacks[-1] == 429
    assert _get(app, "10.9.2.1", owner) == 200


def test_guesses_past_the_allowance_cost_the_database_nothing(gated) -> None:
    app, container = gated
    create_key(container.engine, ["events:read"])  # the server has keys
    for i in range(3):
        _get(app, "10.9.3.1", f"hcp_{i:016x}_guess")  # spend the address's allowance
    statements: list[str] = []
    event.listen(container.engine, "before_cursor_execute",  # queries, not SQLite's BEGIN
                 lambda *args: statements.append(args[2]) if "SELECT" in args[2] else None)
    started = time.monotonic()
    answers = [_get(app, "10.9.3.1", f"hcp_{i:016x}_guess") for i in range(100, 150)]
    took = time.monotonic() - started
    assert answers == [429] * 50
    # At most one read of the issued ids a second, whatever the flood; no key looked up.
    assert len(statements) <= took / IDS_EVERY_S + 1, statements
    assert all("api_keys.key_id = " not in s for s in statements)
