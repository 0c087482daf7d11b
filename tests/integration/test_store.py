"""The shared EventStore suite: every test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from events.errors import EventIdConflict, WrongExpectedSeq
from events.model import EventMetadata, NewEvent
from events.sql_store import SqlEventStore
from kernel.db import is_postgres
from tests.integration.conftest import append_many, new_event


def test_append_assigns_gapless_positions_and_stream_seqs(store: SqlEventStore) -> None:
    events = append_many(store, streams=3, per_stream=4, batch=5)

    assert [e.position for e in events] == list(range(1, 13))
    for stream in {e.stream_id for e in events}:
        assert [e.stream_seq for e in events if e.stream_id == stream] == [1, 2, 3, 4]
    assert store.head() == 12


def test_reads_return_what_was_written(store: SqlEventStore) -> None:
    meta = EventMetadata(occurred_at=datetime(2026, 1, 2, 3, 4, 5, 600, tzinfo=UTC), actor="u1",
                         tenant="acme", specialist="coding", adapter_version="coding@3",
                         contract="default@2", causation_id=uuid.uuid4(),
                         correlation_id=uuid.uuid4())
    written = store.append([NewEvent(stream_id="s", type="x.custom",
                                     payload={"n": 1.5, "nested": {"ü": [1, None]}},
                                     metadata=meta)])[0].event

    assert store.get(written.event_id) == written
    assert store.read_stream("s") == [written]
    assert store.read_all() == [written]
    assert store.get(uuid.uuid4()) is None


def test_read_all_and_read_stream_page(store: SqlEventStore) -> None:
    events = append_many(store, streams=1, per_stream=7)

    assert store.read_all(after=2, limit=3) == events[2:5]
    assert store.read_stream(events[0].stream_id, after_seq=5) == events[5:]
    assert list(store.iter_all(page=2)) == events


def test_an_auditor_reads_events_by_position_and_of_types_after_one(store: SqlEventStore,
                                                                    engine: Engine) -> None:
    events = append_many(store, streams=2, per_stream=3)
    assert store.at_positions([2, 5, 99]) == {2: events[1], 5: events[4]}
    with engine.connect() as conn:  # inside the caller's transaction (an audit's snapshot)
        assert store.at_positions([1], conn) == {1: events[0]}
        types = {e.type for e in events}
        assert list(store.scan_types(types, conn, page=2, after=4)) == events[4:]
        assert [c.position for c in store.closers(types, 1, 3, 10, conn=conn)] == [2, 3]


def test_same_event_twice_is_stored_once(store: SqlEventStore) -> None:
    event = new_event("s")
    first = store.append([event])[0]
    again = store.append([event])[0]

    assert first.created and not again.created
    assert again.event == first.event
    assert store.head() == 1


def test_duplicate_inside_one_batch_is_stored_once(store: SqlEventStore) -> None:
    event = new_event("s")
    results = store.append([event, event])

    assert [r.created for r in results] == [True, False]
    assert store.head() == 1


def test_same_event_id_with_other_content_conflicts(store: SqlEventStore) -> None:
    event_id = uuid.uuid4()
    store.append([new_event("s", "a", event_id=event_id)])

    with pytest.raises(EventIdConflict) as info:
        store.append([new_event("s2"), new_event("s", "b", event_id=event_id)])
    assert info.value.field == "events[1].event_id"
    assert store.head() == 1  # the valid first item was not stored either


def test_expected_seq_is_checked(store: SqlEventStore) -> None:
    store.append([new_event("s", expected_seq=0)])
    store.append([new_event("s", expected_seq=1)])

    with pytest.raises(WrongExpectedSeq) as info:
        store.append([new_event("s", expected_seq=1)])
    assert (info.value.expected, info.value.actual) == (1, 2)
    with pytest.raises(WrongExpectedSeq):
        store.append([new_event("s", expected_seq=0)])  # 0 means "must be a new stream"
    assert store.head() == 2


def test_a_failing_batch_stores_nothing(store: SqlEventStore) -> None:
    store.append([new_event("s")])
    with pytest.raises(WrongExpectedSeq):
        store.append([new_event("a"), new_event("b"), new_event("s", expected_seq=0)])

    assert store.head() == 1
    assert store.read_stream("a") == []


def test_append_joins_the_callers_transaction(store: SqlEventStore, engine: Engine) -> None:
    with engine.connect() as conn, conn.begin() as tx:
        store.append([new_event("s")], conn=conn)
        tx.rollback()
    assert store.head() == 0

    with engine.begin() as conn:
        store.append([new_event("s")], conn=conn)
    assert store.head() == 1


def test_old_schema_versions_are_upcast_on_read_but_stored_as_written(store: SqlEventStore) -> None:
    stored = store.append([NewEvent(stream_id="s", type="feedback.given", schema_version=1,
                                    payload={"thumbs_up": True})])[0].event

    read = store.get(stored.event_id)
    assert read is not None
    assert (read.schema_version, read.payload) == (2, {"thumbs": "up"})
    assert store.read_all(raw=True)[0].payload == {"thumbs_up": True}
    assert store.verify().intact


def test_chain_links_every_event(store: SqlEventStore) -> None:
    events = append_many(store, streams=2, per_stream=3)

    assert all(b.prev_hash == a.hash for a, b in zip(events, events[1:], strict=False))
    report = store.verify()
    assert report.intact and report.checked == 6 and report.last_position == 6


@pytest.mark.parametrize("statement", [
    "UPDATE events SET actor = 'mallory'",
    "DELETE FROM events",
    "DELETE FROM events WHERE position = 1",
    "TRUNCATE events",
])
def test_the_database_refuses_to_change_history(store: SqlEventStore, engine: Engine,
                                                statement: str) -> None:
    store.append([new_event("s")])
    if statement.startswith("TRUNCATE") and not is_postgres(engine):
        pytest.skip("SQLite has no TRUNCATE; its truncate optimisation is a DELETE (covered)")

    with pytest.raises(DBAPIError, match="append-only"), engine.begin() as conn:
        conn.execute(text(statement))
    assert store.head() == 1
    assert store.verify().intact


def test_occurred_at_in_any_timezone_reads_back_as_the_same_instant(store: SqlEventStore) -> None:
    moment = datetime.fromisoformat("2026-03-01T10:00:00.123456+02:00")
    written = store.append([new_event("s", metadata=EventMetadata(occurred_at=moment))])[0].event

    read = store.get(written.event_id)
    assert read is not None and read.metadata.occurred_at == moment
    assert store.verify().intact
