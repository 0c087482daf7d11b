"""A relay whose lock's session ends stops publishing; release never raises; on SQLite
(one process owns the file) the lock is always held."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest
from sqlalchemy import text

from events.checkpoints import Checkpoints
from events.relay import EventsFeed, OutboxMessage, RelayLoop
from events.relay_lock import LockLost, RelayLock
from events.sql_store import SqlEventStore
from kernel.db import is_postgres, make_engine
from tests.integration.conftest import append_many


class Recorder:
    def __init__(self) -> None:
        self.published: list[int] = []

    def publish(self, topic: str, messages: Sequence[OutboxMessage]) -> None:
        self.published += [m.position for m in messages]


def end_session_of(lock: RelayLock, url: str) -> None:
    """What a PostgreSQL restart does to the lock: its session ends under it."""
    assert lock._conn is not None
    pid = lock._conn.execute(text("SELECT pg_backend_pid()")).scalar()
    killer = make_engine(url, isolation_level="AUTOCOMMIT")
    with killer.connect() as conn:
        conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    killer.dispose()


def test_a_lock_whose_session_ended_is_lost_and_released_quietly(postgres_url):
    engine = make_engine(postgres_url)
    never = threading.Event()
    first, second = RelayLock(engine, "hcp"), RelayLock(engine, "hcp")
    assert first.acquire(never) and first.held()
    assert not second.acquire(never, wait=False)

    end_session_of(first, postgres_url)

    assert not first.held()
    with pytest.raises(LockLost):
        first.check()
    first.release()  # on a dead connection: no exception
    assert second.acquire(never, wait=False) and second.held()
    assert not first.acquire(never, wait=False)  # the old holder now stands by
    second.release()
    engine.dispose()


def test_the_loop_publishes_nothing_once_the_lock_is_lost(database_url):
    engine = make_engine(database_url)
    store = SqlEventStore(engine)
    append_many(store, streams=2, per_stream=10)
    lock, publisher = RelayLock(engine, "hcp"), Recorder()
    assert lock.acquire(threading.Event())
    loop = RelayLoop([EventsFeed(store, "t.events")], publisher, Checkpoints(engine), page_size=5,
                     before_publish=lock.check)
    loop.step()
    assert publisher.published == [1, 2, 3, 4, 5]
    if not is_postgres(engine):
        assert lock.held()  # SQLite: nothing to lose
        return
    end_session_of(lock, database_url)
    with pytest.raises(LockLost):
        loop.step()
    with pytest.raises(LockLost):
        loop.run(threading.Event())  # not retried like a database error: the loop ends
    assert publisher.published == [1, 2, 3, 4, 5]
    assert Checkpoints(engine).load("relay:t.events") == 5
    lock.release()
    engine.dispose()
