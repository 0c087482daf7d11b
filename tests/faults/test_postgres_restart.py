"""PostgreSQL restarts under the writers: the bulk insert's errors are SQLAlchemy's (so the
evaluator retries them), and a restart in the middle of scoring loses and doubles nothing."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from evaluators.tables import reward_records
from events.model import EventMetadata, NewEvent
from events.sql_store import SqlEventStore
from events.tables import events
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from kernel.sql import insert_few, insert_rows
from tests.faults.conftest import PrivatePostgres, wait_for
from tests.unit.evaluators.factories import contract_text, publish

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def conversation(turns: int = 2) -> list[NewEvent]:
    """One stream's events with fixed ids, so a batch can be retried without doubling."""
    stream, meta = f"s-{uuid.uuid4().hex[:10]}", EventMetadata(specialist="chat")
    batch: list[NewEvent] = []
    for i in range(turns):
        batch += [NewEvent(stream, "turn.user", {"text": f"q{i}"}, metadata=meta),
                  NewEvent(stream, "turn.assistant", {"text": f"a{i}"}, metadata=meta)]
    return [*batch, NewEvent(stream, "episode.completed", {"outcome": "success"}, metadata=meta)]


def append_retrying(store: SqlEventStore, batch: list[NewEvent], timeout: float = 60) -> None:
    def attempt() -> bool:
        try:
            store.append(batch)  # a retry of a batch that did commit is a no-op (same ids)
            return True
        except DBAPIError:
            return False

    wait_for(attempt, timeout, "the database to take the batch", every=0.2)


def copy_one_row(conn: Connection) -> None:
    insert_rows(conn, events, [{c.name: None for c in events.columns}], json_columns=("payload",))


def insert_one_row(conn: Connection) -> None:
    insert_few(conn, "events", ["position"], [(1,)])


@pytest.mark.parametrize(("write", "statement"), [(copy_one_row, "COPY events"),
                                                  (insert_one_row, "INSERT INTO events")])
def test_a_store_write_on_a_dropped_connection_raises_dbapi_error_and_drops_it(
        private_database: str, write: Callable[[Connection], None], statement: str) -> None:
    """Both of the store's write paths on the raw driver connection (the COPY, and one
    INSERT for a few rows) must raise SQLAlchemy's error, which the evaluator's loop
    retries, and invalidate the connection they found dead."""
    engine = make_engine(private_database)
    killer = make_engine(private_database, isolation_level="AUTOCOMMIT")
    conn = engine.connect()
    conn.begin()
    pid = conn.execute(text("SELECT pg_backend_pid()")).scalar()
    with killer.connect() as other:
        other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    with pytest.raises(DBAPIError) as raised:
        write(conn)
    assert raised.value.connection_invalidated and statement in str(raised.value)
    conn.close()
    store = SqlEventStore(engine)  # the pool hands out a live connection next
    store.append(conversation())
    assert store.head() == 5
    killer.dispose()
    engine.dispose()


def test_the_evaluator_survives_a_restart_while_it_scores(private_postgres: PrivatePostgres,
                                                          private_database: str) -> None:
    container = Container(Settings(database_url=private_database, kafka_bootstrap=""),
                          make_engine(private_database))
    publish(container.contracts, contract_text())
    evaluator = container.evaluator(batch_size=25)
    stop = threading.Event()
    worker = threading.Thread(target=evaluator.run, args=(stop,),
                              kwargs={"poll_timeout": 0.1, "max_backoff": 1.0}, daemon=True)
    worker.start()
    conversations = 80
    for i in range(conversations):
        if i in (25, 55):  # while the evaluator is busy with the earlier ones
            private_postgres.restart(down_s=1.0)
        append_retrying(container.store, conversation())

    def scored() -> int:
        try:
            with container.engine.connect() as conn:
                return int(conn.execute(select(func.count()).select_from(reward_records)).scalar() or 0)
        except DBAPIError:
            return 0

    wait_for(lambda: scored() >= 2 * conversations, 120, "every subject to be scored")
    stop.set()
    worker.join(30)
    assert not worker.is_alive()
    with container.engine.connect() as conn:
        positions = [r[0] for r in conn.execute(select(reward_records.c.position)
                                                .order_by(reward_records.c.position))]
        subjects = conn.execute(select(func.count(func.distinct(reward_records.c.subject_id)))).scalar()
    # Every turn of every conversation once: no reward lost, none doubled, no position gap.
    assert positions == list(range(1, 2 * conversations + 1))
    assert subjects == 2 * conversations
    container.close()
