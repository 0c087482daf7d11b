"""One relay publishes an outbox at a time; a standby takes over when it goes away."""

from __future__ import annotations

import json
import threading

import pytest

from events.checkpoints import Checkpoints
from events.kafka_io import ensure_topics
from events.kafka_producers import PRODUCER_KINDS, make_publisher
from events.relay import EventsFeed, RelayLoop
from events.relay_lock import RelayLock
from events.sql_store import SqlEventStore
from kernel.db import make_engine
from tests.integration.conftest import append_many, first_occurrences, read_topic


def test_a_second_relay_waits_until_the_first_lets_go(postgres_url):
    engine = make_engine(postgres_url)
    never = threading.Event()
    first, second = RelayLock(engine, "hcp"), RelayLock(engine, "hcp")
    assert first.acquire(never)
    assert not second.acquire(never, wait=False)  # `hcp relay --once` gives up at once

    took_over = threading.Event()
    standby = threading.Thread(target=lambda: second.acquire(never, poll_s=0.05) and took_over.set())
    standby.start()
    assert not took_over.wait(0.3)  # still standing by while the first holds the outbox
    first.release()  # (a killed relay's connection drops the lock the same way)
    assert took_over.wait(5)
    standby.join()
    second.release()
    engine.dispose()


def test_other_prefixes_relay_independently(postgres_url):
    engine = make_engine(postgres_url)
    never = threading.Event()
    a, b = RelayLock(engine, "hcp"), RelayLock(engine, "staging")
    assert a.acquire(never) and b.acquire(never, wait=False)
    a.release(), b.release()
    engine.dispose()


@pytest.mark.kafka
@pytest.mark.parametrize("producer", PRODUCER_KINDS)
def test_a_standby_takes_over_from_the_checkpoint(postgres_url, kafka_bootstrap, topic_prefix,
                                                   producer):
    engine = make_engine(postgres_url)
    store, topic, never = SqlEventStore(engine), f"{topic_prefix}.events", threading.Event()
    ensure_topics(kafka_bootstrap, [topic])
    append_many(store, streams=4, per_stream=25)
    first, second = RelayLock(engine, topic_prefix), RelayLock(engine, topic_prefix)
    assert first.acquire(never)
    publisher = make_publisher(producer, kafka_bootstrap)
    RelayLoop([EventsFeed(store, topic)], publisher, Checkpoints(engine), page_size=30).step()
    publisher.close()
    first.release()  # the active relay goes away after one page

    append_many(store, streams=2, per_stream=10)
    assert second.acquire(never, wait=False)
    publisher = make_publisher(producer, kafka_bootstrap)
    [progress] = RelayLoop([EventsFeed(store, topic)], publisher, Checkpoints(engine),
                           page_size=30).drain()
    publisher.close()
    second.release()

    assert progress.published == 90  # it resumed after the first relay's page, not from 0
    log = [e.to_json() for e in store.iter_all(raw=True)]
    published = [json.loads(r.value) for r in read_topic(kafka_bootstrap, topic, expect=len(log))]
    assert len(published) == len(log) == 120
    assert first_occurrences(published) == first_occurrences(log)
    engine.dispose()
