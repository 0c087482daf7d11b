"""Stream heads a store knows from its own commits (events/stream_heads.py) never stand
in for the log once another writer, or a caller's transaction, has moved it: seqs stay
gapless, expected seqs and stream tenants are checked against what is stored. Both
databases (SQLite reads every head; the suite must hold the same there)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from events.errors import StreamOfAnotherTenant, WrongExpectedSeq
from events.group_commit import GroupCommit
from events.model import EventMetadata
from events.sql_append import FEW_ROWS
from events.sql_store import SqlEventStore
from tests.integration.conftest import new_event

STREAMS = ["s1", "s2", "s3"]


def seqs_of(store: SqlEventStore, stream: str) -> list[int]:
    return [e.stream_seq for e in store.read_stream(stream, limit=10_000)]


@pytest.mark.parametrize("size", [2, FEW_ROWS * 2])  # one INSERT, or the COPY
def test_two_stores_taking_turns_on_the_same_streams_keep_seqs_gapless(engine: Engine, size: int) -> None:
    stores = [SqlEventStore(engine), SqlEventStore(engine)]
    for turn in range(6):
        for store in (stores[turn % 2], stores[turn % 2], stores[(turn + 1) % 2]):
            store.append([new_event(STREAMS[i % 3], f"t{turn}-{i}") for i in range(size)])

    total = 6 * 3 * size
    for stream in STREAMS:
        assert seqs_of(stores[0], stream) == list(range(1, len(seqs_of(stores[0], stream)) + 1))
    assert stores[0].head() == total and stores[1].verify().intact


def test_expected_seq_counts_the_other_writers_events(engine: Engine) -> None:
    mine, other = SqlEventStore(engine), SqlEventStore(engine)
    mine.append([new_event("s"), new_event("s")])
    other.append([new_event("s")])

    with pytest.raises(WrongExpectedSeq) as info:
        mine.append([new_event("s", expected_seq=2)])
    assert info.value.actual == 3
    assert mine.append([new_event("s", expected_seq=3)])[0].event.stream_seq == 4


def test_a_stream_taken_by_another_tenant_elsewhere_is_refused(engine: Engine) -> None:
    mine, other = SqlEventStore(engine), SqlEventStore(engine)
    acme, globex = EventMetadata(tenant="acme"), EventMetadata(tenant="globex")
    with pytest.raises(WrongExpectedSeq):  # refused, but mine has now seen "t" new
        mine.append([new_event("t", metadata=acme), new_event("t", metadata=acme, expected_seq=5)])
    other.append([new_event("t", metadata=globex)])

    with pytest.raises(StreamOfAnotherTenant):
        mine.append([new_event("t", metadata=acme)])
    assert mine.append([new_event("t", metadata=globex)])[0].event.stream_seq == 2


def test_the_callers_transaction_moves_the_log_or_leaves_it(store: SqlEventStore, engine: Engine) -> None:
    store.append([new_event("s")])
    with engine.connect() as conn, conn.begin() as tx:
        store.append([new_event("s"), new_event("s")], conn=conn)
        tx.rollback()
    assert store.append([new_event("s")])[0].event.stream_seq == 2

    with engine.begin() as conn:
        store.append([new_event("s")], conn=conn)
    assert store.append([new_event("s")])[0].event.stream_seq == 4
    assert seqs_of(store, "s") == [1, 2, 3, 4] and store.verify().intact


def test_a_refused_batch_leaves_the_known_heads_as_stored(store: SqlEventStore) -> None:
    store.append([new_event("s"), new_event("s")])
    with pytest.raises(WrongExpectedSeq):
        store.append([new_event("s"), new_event("n", expected_seq=5)])

    assert store.append([new_event("s", expected_seq=2), new_event("n", expected_seq=0)])
    assert seqs_of(store, "s") == [1, 2, 3] and seqs_of(store, "n") == [1]


def test_group_commits_on_threads_beside_another_writer_keep_every_stream_gapless(engine: Engine) -> None:
    store, other = SqlEventStore(engine), SqlEventStore(engine)
    group = GroupCommit(store)
    failures: list[BaseException] = []

    def write(appender: Any, tag: str) -> None:
        try:
            for turn in range(8):
                appender.append([new_event(STREAMS[(turn + i) % 3], f"{tag}{turn}-{i}") for i in range(5)])
        except BaseException as exc:  # noqa: BLE001 (reported below)
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(group, f"g{n}")) for n in range(4)]
    threads.append(threading.Thread(target=write, args=(other, "o")))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    assert store.head() == 5 * 8 * 5
    for stream in STREAMS:
        seqs = seqs_of(store, stream)
        assert seqs == list(range(1, len(seqs) + 1))
    assert store.verify().intact
