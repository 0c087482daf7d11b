"""API keys are a projection of their events: a superuser's escalation grants nothing and
is named by ``hcp rebuild --check`` and the audit; a dropped table comes back exactly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from access.keys import ApiKeys
from access.tables import api_keys
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import is_postgres, make_engine
from tests.integration.superuser import as_superuser, sql


@pytest.fixture
def container(database_url: str, tmp_path: Path) -> Iterator[Container]:
    built = Container(Settings(database_url=database_url, kafka_bootstrap="", data_dir=tmp_path),
                      make_engine(database_url))
    yield built
    built.close()


def _rows(c: Container) -> list[dict[str, object]]:
    with c.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(select(api_keys).order_by(api_keys.c.key_id))]


def test_an_escalated_scope_is_refused_and_named(container: Container) -> None:
    auditor = container.keys.create(["audit:read"], label="auditor", actor="cli:alice")
    container.keys.create(["admin"], label="root", actor="cli:alice")
    key_id = auditor.split("_")[1]
    assert container.rebuilder.check().ok

    as_superuser(container.engine, sql("UPDATE api_keys SET scopes = '[\"admin\"]' WHERE label = 'auditor'"))

    report = container.rebuilder.check(["api_keys"])
    [difference] = report.checks[0].differences
    assert (difference.table, difference.row, difference.kind) == ("api_keys", f"key_id={key_id}", "differs")
    assert "scopes is ['admin'] in the table but ['audit:read']" in difference.detail
    audit = container.auditor.everything()
    assert not audit.ok
    assert any(m.subject == f"api_keys key_id={key_id}" and "scopes" in m.message for m in audit.mismatches)
    fresh = ApiKeys(container.engine, container.store)  # no cache: reads the row
    assert fresh.authenticate(auditor) is None


def test_a_ghost_key_and_a_deleted_one_are_named(container: Container) -> None:
    kept = container.keys.create(["events:read"], label="kept", actor="cli:alice")
    gone = container.keys.create(["events:read"], label="gone", actor="cli:alice")
    ghost = container.keys.create(["admin"], label="ghost", actor="cli:alice")
    ghost_row = next(r for r in _rows(container) if r["label"] == "ghost")

    def forge(conn: object) -> None:
        sql("DELETE FROM api_keys WHERE label IN ('gone', 'ghost')")(conn)  # type: ignore[arg-type]
        conn.execute(api_keys.insert().values({**ghost_row, "key_id": "0" * 16}))  # type: ignore[attr-defined]

    as_superuser(container.engine, forge)
    kinds = {(d.row, d.kind) for d in container.rebuilder.check(["api_keys"]).checks[0].differences}
    assert kinds == {(f"key_id={gone.split('_')[1]}", "missing"),
                     (f"key_id={ghost.split('_')[1]}", "missing"), ("key_id=" + "0" * 16, "extra")}
    assert ApiKeys(container.engine, container.store).authenticate(kept) is not None
    forged = f"hcp_{'0' * 16}_{ghost.split('_', 2)[2]}"
    assert ApiKeys(container.engine, container.store).authenticate(forged) is None


def test_a_dropped_table_is_rebuilt_exactly(container: Container) -> None:
    key = container.keys.create(["events:read"], label="reader", tenant="acme", actor="cli:alice")
    container.keys.revoke(container.keys.create(["admin"], label="old", actor="cli:alice").split("_")[1],
                          "cli:bob", "rotated")
    before = _rows(container)
    cascade = " CASCADE" if is_postgres(container.engine) else ""
    as_superuser(container.engine, sql(f"DROP TABLE api_keys{cascade}"))
    assert not container.rebuilder.check(["api_keys"]).ok

    report = container.rebuilder.rebuild(["api_keys"])

    assert [(r.table, r.created, r.inserted) for r in report.rebuilt] == [("api_keys", True, 2)]
    assert _rows(container) == before
    assert container.rebuilder.check().ok
    assert ApiKeys(container.engine, container.store).authenticate(key) is not None
