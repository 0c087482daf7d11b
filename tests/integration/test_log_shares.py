"""Shares of the database log (events/log_share.py): N evaluator processes that follow the
log together, on SQLite and PostgreSQL. Every event is read by the one share its stream
is in (contract streams by all), every subject scored once, and a change of the number
of processes skips nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from contract.versions import contract_stream
from evaluators.rewards import RewardQuery, RewardStore
from events.checkpoints import Checkpoints
from events.feed import DatabaseLogReader
from events.log_share import CONTRACT_STREAMS, SHARE_SQL, LogShare, share_parameters
from events.model import NewEvent, RecordedEvent
from hcp.bootstrap import Container
from hcp.settings import Settings, get_settings
from kernel.db import make_engine
from tests.integration.cli import hcp
from tests.unit.evaluators.factories import contract_text, conversation, publish


@pytest.fixture
def container(database_url: str) -> Iterator[Container]:
    built = Container(Settings(database_url=database_url, kafka_bootstrap=""), make_engine(database_url))
    yield built
    built.close()


def publish_first(container: Container) -> None:
    """The contract, with its re-evaluation of the (empty) history done: what is scored
    below is scored by the evaluators' own shares."""
    publish(container.contracts, contract_text())
    jobs = container.reevaluations
    jobs.run(jobs.start("default", 1).job_id)


def rewarded(container: Container) -> list[str]:
    return [r.subject_id for r in RewardStore(container.engine).find(RewardQuery(limit=10_000))]


def read_everything(reader: DatabaseLogReader) -> list[RecordedEvent]:
    found: list[RecordedEvent] = []
    while events := reader.poll(7, timeout=0):  # small polls: the limit and horizon both matter
        found += events
    return found


def test_the_shares_split_the_streams_and_each_reads_to_the_head(container: Container) -> None:
    publish(container.contracts, contract_text())
    streams = [conversation(container.store, turns=1) for _ in range(12)]
    head = container.store.head()

    shares = [LogShare(k, 3) for k in range(3)]
    readers = [DatabaseLogReader(container.engine, container.store, "g", share=s) for s in shares]
    read = [read_everything(r) for r in readers]

    everything = container.store.read_all(0, 10_000)
    contract_events = [e.position for e in everything if e.stream_id.startswith(contract_stream(""))]
    assert contract_events  # publishing wrote to the contract's stream
    for share, events in zip(shares, read, strict=True):
        assert [e.position for e in events] == sorted(e.position for e in events)
        assert {e.stream_id for e in events} - {contract_stream("default")} == {
            s for s in streams if share.holds(s)}
        assert set(contract_events) <= {e.position for e in events}  # every share sees them
    others = [sorted(e.position for e in events if e.position not in contract_events) for events in read]
    assert sorted(p for share in others for p in share) == sorted(
        e.position for e in everything if e.position not in contract_events)  # each event once
    assert all(len(share) > 0 for share in others)  # 12 streams: each share gets some
    assert [r.position for r in readers] == [head] * 3  # past the other shares' events too


def test_evaluators_with_shares_score_every_subject_once(container: Container) -> None:
    publish_first(container)
    for _ in range(10):
        conversation(container.store, turns=2)

    for k in range(2):
        container.evaluator("g", share=LogShare(k, 2)).drain(timeout=60)

    subjects = rewarded(container)
    assert len(subjects) == 20 and len(set(subjects)) == 20
    head = container.store.head()
    assert Checkpoints(container.engine).load_family("reader:g") == {
        "reader:g/0-of-2": head, "reader:g/1-of-2": head}


def test_a_new_number_of_processes_skips_nothing(container: Container) -> None:
    publish_first(container)
    streams = [conversation(container.store, turns=1) for _ in range(10)]
    container.evaluator("g", share=LogShare(0, 2)).drain(timeout=60)  # share 1 never ran
    half = rewarded(container)
    assert 0 < len(half) < 10

    # One process now: share 1 has read nothing, so the split as a whole has not either.
    one = container.evaluator("g")
    assert one.reader.position == 0
    one.drain(timeout=60)
    assert sorted(rewarded(container)) == sorted(f"turn:{s}:1" for s in streams)

    # Three processes after that: the one process had read it all, so they start at the head.
    head = container.store.head()
    three = [container.evaluator("g", share=LogShare(k, 3)) for k in range(3)]
    assert [w.reader.position for w in three] == [head] * 3
    later = conversation(container.store, turns=1)
    for worker in three:
        worker.drain(timeout=60)
    assert len(rewarded(container)) == 11 and f"turn:{later}:1" in rewarded(container)


def stream_of(share: LogShare, holds: bool = True) -> str:
    """A new stream id that ``share`` holds (or not)."""
    return next(s for s in (f"s-{uuid.uuid4().hex[:10]}" for _ in range(1000)) if share.holds(s) == holds)


def test_a_poll_reads_past_other_shares_events_to_the_next_of_its_own(container: Container) -> None:
    share = LogShare(0, 2)
    for _ in range(20):
        conversation(container.store, turns=2, stream_id=stream_of(share, holds=False))
    mine = conversation(container.store, turns=1, stream_id=stream_of(share))

    reader = DatabaseLogReader(container.engine, container.store, "g", share=share)
    first = reader.poll(5, timeout=0)  # reads are 10 positions at a time: 15 of them first

    assert first and {e.stream_id for e in first} == {mine}
    assert reader.poll(5, timeout=0) == [] and reader.position == container.store.head()


def test_a_share_without_events_keeps_its_checkpoint_with_the_log(container: Container) -> None:
    publish_first(container)
    share = LogShare(0, 2)
    conversation(container.store, turns=1, stream_id=stream_of(share, holds=False))  # share 1's

    container.evaluator("g", share=share).drain(timeout=60)

    assert rewarded(container) == []
    assert Checkpoints(container.engine).load("reader:g/0-of-2") == container.store.head()


def test_share_names_are_checked() -> None:
    assert LogShare.parse(" 1/3 ") == LogShare(1, 3) and str(LogShare(1, 3)) == "1/3"
    for bad in ("3/3", "1", "-1/2", "a/b", "0/0"):
        with pytest.raises(ValueError, match="share"):
            LogShare.parse(bad)
    assert contract_stream("") == CONTRACT_STREAMS


def test_postgres_picks_the_streams_python_does(postgres_url: str) -> None:
    engine = make_engine(postgres_url)
    streams = [f"stream-{i}" for i in range(300)] + ["", "ünïcode-ß", "contract:x", "with space"]
    try:
        with engine.connect() as conn:
            for share in (LogShare(0, 2), LogShare(1, 2), LogShare(2, 5)):
                picked = {row[0] for row in conn.execute(
                    text(f"SELECT stream_id FROM unnest(CAST(:streams AS text[])) AS events(stream_id) "
                         f"WHERE {SHARE_SQL}"), {"streams": streams, **share_parameters(share)})}
                assert picked == {s for s in streams if share.holds(s)}
    finally:
        engine.dispose()


def test_hcp_evaluator_processes_score_the_log_once(postgres_url: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HCP_DATABASE_URL", postgres_url)
    monkeypatch.setenv("HCP_KAFKA_BOOTSTRAP", "")
    get_settings.cache_clear()
    built = Container(Settings(database_url=postgres_url, kafka_bootstrap=""), make_engine(postgres_url))
    try:
        publish_first(built)
        for _ in range(8):
            conversation(built.store, turns=2)
        built.store.append([NewEvent("other", "note.added", {"text": "not a subject"})])

        hcp("evaluator", "--once", "--processes", "2")

        subjects = rewarded(built)
        assert len(subjects) == 16 and len(set(subjects)) == 16
        assert set(Checkpoints(built.engine).load_family("reader:evaluator")) == {
            "reader:evaluator/0-of-2", "reader:evaluator/1-of-2"}
        assert "give --processes or --share" in hcp("evaluator", "--processes", "2", "--share", "0/2",
                                                    code=2)
        assert "expected K/N" in hcp("evaluator", "--share", "two", code=2)
        assert "SQLite" not in hcp("evaluator", "--once", "--processes", "2")  # (PostgreSQL here)
    finally:
        built.close()
        get_settings.cache_clear()
