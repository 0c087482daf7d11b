"""Tamper evidence: a superuser who gets past the triggers still cannot hide an edit.

Each test rewrites history the way only a superuser could (PostgreSQL: replication
role ``replica`` skips user triggers; SQLite: drop the triggers) and expects the store,
``hcp verify`` and ``GET /v1/audit/verify`` all to name the first broken position.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine
from typer.testing import CliRunner

from access.keys import create_key
from api.app import create_app
from cli.main import app as cli
from events.sql_store import SqlEventStore
from events.tables import events as events_table
from hcp.bootstrap import bootstrap
from hcp.settings import Settings, get_settings
from kernel.db import is_postgres
from tests.integration.conftest import append_many


def tamper(engine: Engine, change: Callable[[Connection], Any]) -> None:
    with engine.begin() as conn:
        if is_postgres(conn):
            conn.execute(text("SET LOCAL session_replication_role = replica"))
        else:
            conn.execute(text("DROP TRIGGER IF EXISTS events_no_update"))
            conn.execute(text("DROP TRIGGER IF EXISTS events_no_delete"))
        change(conn)


def change_payload(conn: Connection) -> None:
    conn.execute(events_table.update().where(events_table.c.position == 3)
                 .values(payload={"text": "something else"}))


def change_field(conn: Connection) -> None:
    conn.execute(text("UPDATE events SET actor = 'mallory' WHERE position = 3"))


def delete_row(conn: Connection) -> None:
    conn.execute(text("DELETE FROM events WHERE position = 3"))


def swap_rows(conn: Connection) -> None:
    # Swap everything but the position of rows 2 and 4 (delete and re-insert, because
    # the unique constraints would refuse the in-between state of an UPDATE).
    rows = {r.position: dict(r._mapping) for r in conn.execute(
        events_table.select().where(events_table.c.position.in_([2, 4])))}
    conn.execute(events_table.delete().where(events_table.c.position.in_([2, 4])))
    conn.execute(events_table.insert(), [{**rows[4], "position": 2}, {**rows[2], "position": 4}])


CASES = {
    "changed payload": (change_payload, 3, "payload"),
    "changed field": (change_field, 3, "metadata"),
    "deleted row": (delete_row, 4, "missing"),  # the event after the hole is the first misfit
    "reordered rows": (swap_rows, 2, "prev_hash"),
}


@pytest.fixture
def log5(database_url: str, engine: Engine) -> SqlEventStore:
    store = SqlEventStore(engine)
    append_many(store, streams=2, per_stream=3)  # positions 1..6
    return store


@pytest.fixture
def verify_cli(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], Any]]:
    monkeypatch.setenv("HCP_DATABASE_URL", database_url)
    monkeypatch.delenv("HCP_KAFKA_BOOTSTRAP", raising=False)
    get_settings.cache_clear()
    yield lambda: CliRunner().invoke(cli, ["verify"])
    get_settings.cache_clear()


@pytest.fixture
def audit_api(database_url: str) -> Iterator[Callable[[], Any]]:
    container = bootstrap(Settings(database_url=database_url))
    key = create_key(container.engine, ["audit:read"])
    with TestClient(create_app(container)) as client:
        yield lambda: client.get("/v1/audit/verify", headers={"Authorization": f"Bearer {key}"})
    container.close()


def test_an_untouched_log_verifies(log5: SqlEventStore, verify_cli: Callable[[], Any],
                                   audit_api: Callable[[], Any]) -> None:
    result = verify_cli()
    assert result.exit_code == 0, result.output
    assert "intact: 7 events" in result.output  # log5's six, and the audit key's creation
    body = audit_api().json()
    assert body == {"intact": True, "checked": 7, "last_position": 7,
                    "first_break_position": None, "reason": None}


@pytest.mark.parametrize("case", list(CASES))
def test_tampering_is_reported_at_the_first_broken_position(
    case: str, log5: SqlEventStore, engine: Engine,
    verify_cli: Callable[[], Any], audit_api: Callable[[], Any],
) -> None:
    change, position, reason = CASES[case]
    tamper(engine, change)

    report = log5.verify()
    assert not report.intact and report.first_break is not None
    assert report.first_break.position == position
    assert reason in report.first_break.reason

    result = verify_cli()
    assert result.exit_code == 1
    assert f"BROKEN at position {position}" in result.output

    response = audit_api()
    assert response.status_code == 200
    body = response.json()
    assert (body["intact"], body["first_break_position"]) == (False, position)
    assert reason in body["reason"]
