"""The relay wakes on a commit's notification (PostgreSQL LISTEN/NOTIFY) instead of its
poll interval, and still publishes everything when notifications are lost."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from sqlalchemy import text
from sqlalchemy.engine import Engine

from evaluators.outbox import rewards_table_feed
from evaluators.rewards import RewardStore
from events.checkpoints import Checkpoints
from events.relay import EventsFeed, OutboxFeed, OutboxMessage, RelayLoop
from events.relay_wake import OutboxWaker
from events.sql_store import SqlEventStore
from kernel.db import make_engine
from tests.integration.conftest import append_many, new_event
from tests.integration.test_reward_chain import reward, seed_contract_row


class MemoryPublisher:
    def __init__(self) -> None:
        self.sent: list[OutboxMessage] = []
        self.pages = 0
        self.topics: list[str] = []  # of each message sent

    def publish(self, topic: str, messages: Sequence[OutboxMessage]) -> None:
        self.sent.extend(messages)
        self.topics.extend(topic for _ in messages)
        self.pages += 1


def seconds_until(condition, timeout: float = 20.0) -> float:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, "timed out"
        time.sleep(0.005)
    return time.monotonic() - started


@contextmanager
def running(loop: RelayLoop) -> Iterator[None]:
    stop = threading.Event()
    runner = threading.Thread(target=loop.run, args=(stop,))
    runner.start()
    try:
        yield
    finally:
        stop.set()
        runner.join(5)
        assert not runner.is_alive(), "the relay did not stop within 5 s"


def idle_relay(engine: Engine, waker: OutboxWaker, fallback_s: float,
               linger_s: float = 0.0) -> tuple[RelayLoop, MemoryPublisher]:
    publisher = MemoryPublisher()
    loop = RelayLoop([EventsFeed(SqlEventStore(engine), "t.events")], publisher, Checkpoints(engine),
                     waker=waker, fallback_s=fallback_s, linger_s=linger_s)
    return loop, publisher


def test_a_commit_wakes_the_relay_long_before_its_fallback(postgres_url: str) -> None:
    engine = make_engine(postgres_url)
    store = SqlEventStore(engine)
    loop, publisher = idle_relay(engine, OutboxWaker(engine), fallback_s=60.0)
    with running(loop):
        time.sleep(0.3)  # it has read the empty log and waits on its LISTEN connection
        for expected in (5, 10):  # and again after publishing: it listens on
            append_many(store, streams=1, per_stream=5)
            assert seconds_until(lambda n=expected: len(publisher.sent) == n) < 2.0
    engine.dispose()


def test_a_trickle_of_commits_within_the_linger_goes_out_as_one_page(postgres_url: str) -> None:
    engine = make_engine(postgres_url)
    store = SqlEventStore(engine)
    loop, publisher = idle_relay(engine, OutboxWaker(engine), fallback_s=60.0, linger_s=0.5)
    with running(loop):
        time.sleep(0.3)
        for _ in range(4):  # four commits, well within the half second it lingers
            append_many(store, streams=1, per_stream=1)
        seconds_until(lambda: len(publisher.sent) == 4)
        time.sleep(0.2)
    assert publisher.pages == 1
    engine.dispose()


def test_only_a_committed_append_notifies(postgres_url: str) -> None:
    engine = make_engine(postgres_url)
    store, never = SqlEventStore(engine), threading.Event()
    waker = OutboxWaker(engine)
    waker.start()
    with engine.connect() as conn:
        transaction = conn.begin()
        store.append([new_event("s-rolled-back")], conn)
        transaction.rollback()
    assert not waker.wait(never, 0.3)
    append_many(store, streams=2, per_stream=3)
    append_many(store, streams=2, per_stream=3)
    time.sleep(0.3)  # delivery to a listener is asynchronous: let both arrive
    assert waker.wait(never, 5.0) == {"events"}  # the feed that grew
    assert not waker.wait(never, 0.2), "queued notifications are consumed by one wake-up"
    waker.close()
    engine.dispose()


class RecordingStop(threading.Event):
    """A stop flag that is never set and remembers how long each wait on it was to be."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(timeout)
        return super().wait(timeout)


def test_commits_notified_while_a_step_ran_are_read_without_lingering(postgres_url: str) -> None:
    engine = make_engine(postgres_url)
    store = SqlEventStore(engine)
    waker = OutboxWaker(engine)
    waker.start()
    append_many(store, streams=1, per_stream=2)  # committed while the relay was busy
    time.sleep(0.3)  # delivery to a listener is asynchronous: let it arrive
    busy = RecordingStop()
    assert waker.wait(busy, 5.0, linger=30.0)
    assert busy.waits == [], "it lingered although the commits had gathered already"

    idle = RecordingStop()
    threading.Timer(0.3, append_many, args=(store,), kwargs={"streams": 1, "per_stream": 1}).start()
    assert waker.wait(idle, 5.0, linger=0.05)  # an idle relay woken by a commit still lingers
    assert idle.waits == [0.05]
    waker.close()
    engine.dispose()


def test_lost_notifications_cost_only_the_fallback(postgres_url: str) -> None:
    engine = make_engine(postgres_url)
    store = SqlEventStore(engine)
    deaf = OutboxWaker(engine, channel="nobody_notifies_this")  # every notification lost
    loop, publisher = idle_relay(engine, deaf, fallback_s=0.3)
    with running(loop):
        time.sleep(0.2)
        append_many(store, streams=1, per_stream=4)
        assert seconds_until(lambda: len(publisher.sent) == 4) < 5.0
    engine.dispose()


def test_the_relay_survives_its_listen_connection_dying(postgres_url: str) -> None:
    engine = make_engine(postgres_url)
    store = SqlEventStore(engine)
    loop, publisher = idle_relay(engine, OutboxWaker(engine), fallback_s=0.3)
    with running(loop):
        time.sleep(0.3)
        with engine.begin() as conn:  # what a PostgreSQL restart does to that session
            killed = conn.execute(text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND query LIKE 'LISTEN%'")).scalar()
        assert killed == 1
        append_many(store, streams=1, per_stream=3)
        seconds_until(lambda: len(publisher.sent) == 3)  # by the fallback read
        time.sleep(0.8)  # it listens again ...
        append_many(store, streams=1, per_stream=3)
        seconds_until(lambda: len(publisher.sent) == 6)
    engine.dispose()


def test_sqlite_has_no_notifications_and_polls(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    store = SqlEventStore(engine)
    waker = OutboxWaker(engine)
    assert not waker.listening
    publisher = MemoryPublisher()
    loop = RelayLoop([EventsFeed(store, "t.events")], publisher, Checkpoints(engine),
                     waker=waker, fallback_s=60.0, idle_interval=0.02)
    with running(loop):
        append_many(store, streams=1, per_stream=2)
        assert seconds_until(lambda: len(publisher.sent) == 2) < 2.0
    engine.dispose()


def test_only_a_committed_reward_append_notifies(postgres_url: str) -> None:
    engine = make_engine(postgres_url)
    seed_contract_row(engine)
    rewards, never, waker = RewardStore(engine), threading.Event(), OutboxWaker(engine)
    waker.start()
    with engine.connect() as conn:
        transaction = conn.begin()
        rewards.record([reward("rolled-back")], conn)
        transaction.rollback()
    assert not waker.wait(never, 0.3)
    rewards.record([reward("a"), reward("b")])
    assert waker.wait(never, 5.0) == {"rewards"}
    waker.close()
    engine.dispose()


class CountedReads:
    """A feed that counts how often the relay reads it."""

    def __init__(self, feed: OutboxFeed) -> None:
        self.feed, self.topic, self.wake, self.reads = feed, feed.topic, feed.wake, 0

    def read_after(self, position: int, limit: int, conn: object = None) -> list[OutboxMessage]:
        self.reads += 1
        return self.feed.read_after(position, limit, conn)  # type: ignore[arg-type]


def test_a_relay_woken_by_events_reads_only_the_event_feed(postgres_url: str) -> None:
    engine = make_engine(postgres_url)
    seed_contract_row(engine)
    store = SqlEventStore(engine)
    events = CountedReads(EventsFeed(store, "t.events"))
    rewards = CountedReads(rewards_table_feed(engine, "t.rewards"))
    publisher = MemoryPublisher()
    loop = RelayLoop([events, rewards], publisher, Checkpoints(engine), waker=OutboxWaker(engine),
                     fallback_s=60.0)
    with running(loop):
        seconds_until(lambda: events.reads >= 1 and rewards.reads >= 1)  # the first, full read
        for n in range(1, 6):
            append_many(store, streams=1, per_stream=1)
            seconds_until(lambda n=n: len(publisher.sent) == n)
        assert events.reads >= 6 and rewards.reads == 1  # five wake-ups, each for events only
        RewardStore(engine).record([reward("a")])
        seconds_until(lambda: len(publisher.sent) == 6, timeout=5.0)  # its own wake-up
    assert publisher.topics[-1] == "t.rewards" and rewards.reads == 2
    engine.dispose()


def test_a_feed_whose_notifications_are_lost_is_read_while_others_keep_waking_the_relay(
        postgres_url: str) -> None:
    """Events wake the relay every 50 ms, so its wait never times out; the reward feed,
    whose notifications name a feed the relay does not know, still goes out at the next
    full read (``fallback_s``)."""
    engine = make_engine(postgres_url)
    seed_contract_row(engine)
    store = SqlEventStore(engine)
    deaf_rewards = rewards_table_feed(engine, "t.rewards")
    deaf_rewards.wake = "never-notified"
    publisher = MemoryPublisher()
    loop = RelayLoop([EventsFeed(store, "t.events"), deaf_rewards], publisher, Checkpoints(engine),
                     waker=OutboxWaker(engine), fallback_s=0.5)
    with running(loop):
        time.sleep(0.6)  # past the first full read
        RewardStore(engine).record([reward("a")])
        started = time.monotonic()
        while "t.rewards" not in publisher.topics:
            assert time.monotonic() - started < 3.0, "the reward feed was starved"
            append_many(store, streams=1, per_stream=1)
            time.sleep(0.05)
    engine.dispose()
