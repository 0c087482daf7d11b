"""The pool's cheap liveness check (kernel/db.py): a pooled PostgreSQL connection the
server ended is replaced before anyone uses it, and a warm, quiet one costs no ping."""

from __future__ import annotations

import time
from typing import Any

import pytest
from sqlalchemy import text

import kernel.db
from kernel.db import make_engine

pytestmark = pytest.mark.postgres


def backend_pid(engine: Any) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT pg_backend_pid()")).scalar())


def test_a_connection_the_server_ended_is_replaced_before_use(postgres_url: str) -> None:
    engine = make_engine(postgres_url)
    killer = make_engine(postgres_url, isolation_level="AUTOCOMMIT")
    pid = backend_pid(engine)
    with killer.connect() as conn:
        conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    time.sleep(0.2)  # the server's goodbye reaches the pooled connection's socket

    assert backend_pid(engine) != pid  # no error: pinged, found dead, replaced
    killer.dispose()
    engine.dispose()


def test_a_warm_quiet_connection_is_not_pinged_an_idle_one_is(postgres_url: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    engine = make_engine(postgres_url)
    backend_pid(engine)  # the pool now holds one used connection
    pings: list[Any] = []
    real_ping = engine.dialect.do_ping

    def counted_ping(conn: Any) -> bool:
        pings.append(conn)
        return bool(real_ping(conn))

    monkeypatch.setattr(engine.dialect, "do_ping", counted_ping)

    backend_pid(engine)
    assert pings == []
    monkeypatch.setattr(kernel.db, "PING_AFTER_IDLE_S", 0.0)
    backend_pid(engine)
    assert len(pings) == 1
    engine.dispose()
