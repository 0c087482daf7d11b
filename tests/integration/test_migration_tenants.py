"""Migration 0005 on SQLite and PostgreSQL: existing rewards get their subject's tenant,
and the append-only guard on reward records is back afterwards."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import MetaData, Table, select, text, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DatabaseError

from hcp import migrate
from kernel.db import make_engine

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgres"])
def url_before_0005(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database migrated to the revision before 0005 (the shared template is at head)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
        migrate.upgrade(url, "0007")
        yield url
        return
    admin_url = request.getfixturevalue("postgres_admin_url")
    name = f"hcp_m_{uuid.uuid4().hex[:12]}"
    admin = make_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    migrate.upgrade(url, "0007")
    yield url
    with admin.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    admin.dispose()


def _event(position: int, stream: str, seq: int, tenant: str | None) -> dict:
    return {"position": position, "event_id": uuid.uuid4().hex, "stream_id": stream, "stream_seq": seq,
            "type": "turn.user", "schema_version": 1, "payload": {"text": "q"},
            "recorded_at": NOW, "tenant": tenant, "payload_digest": "0" * 64,
            "prev_hash": "0" * 64, "hash": "0" * 64}


def _reward(position: int, stream: str, first: int, last: int) -> dict:
    return {"position": position, "reward_id": uuid.uuid4().hex, "subject_id": f"turn:{stream}:{first}",
            "subject_kind": "turn", "stream_id": stream, "first_position": first,
            "last_position": last, "event_ids": [], "contract_name": "default",
            "contract_version": 1, "contract_hash": "0" * 64, "evaluator_version": "e",
            "score": 0.5, "components": {}, "gates": {}, "split": "train", "eligible": True,
            "created_at": NOW}


def test_existing_rewards_get_the_tenant_of_their_subjects_events(url_before_0005: str) -> None:
    engine = make_engine(url_before_0005)
    meta = MetaData()
    events, contracts, rewards = (Table(name, meta, autoload_with=engine)
                                  for name in ("events", "contract_versions", "reward_records"))
    with engine.begin() as conn:
        conn.execute(events.insert(), [
            _event(1, "a", 1, "acme"), _event(2, "a", 2, "acme"),
            _event(3, "m", 1, "acme"), _event(4, "m", 2, "globex"),  # mixed: operators only
            _event(5, "n", 1, None)])
        conn.execute(contracts.insert().values(
            name="default", version=1, status="published", document="", content_hash="0" * 64,
            created_by="t", created_at=NOW, updated_at=NOW, last_event_position=0))
        conn.execute(rewards.insert(), [_reward(1, "a", 1, 2), _reward(2, "m", 3, 4),
                                        _reward(3, "n", 5, 5)])
    engine.dispose()

    migrate.upgrade(url_before_0005)

    engine = make_engine(url_before_0005)
    migrated = Table("reward_records", MetaData(), autoload_with=engine)
    with engine.connect() as conn:
        tenants = dict(conn.execute(select(migrated.c.stream_id, migrated.c.tenant)).all())
    assert tenants == {"a": "acme", "m": None, "n": None}
    with pytest.raises(DatabaseError, match="append-only"), engine.begin() as conn:
        conn.execute(update(migrated).values(tenant="globex"))
    engine.dispose()
