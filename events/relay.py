"""The transactional outbox relay: tail a table by its gapless position, publish, checkpoint.

There is no separate outbox table. The events table *is* the outbox: an event and its
"intent to publish" are the same row, so they commit together (no dual write). The
store allocates ``position`` under a lock held until commit, so positions appear in
commit order without gaps, and a relay that has read position P can never later find
an uncommitted P-1 (which a plain sequence would allow).

Each page goes out in this order:

1. read the rows after the feed's checkpoint;
2. publish them and wait until Kafka has acknowledged every one (acks=all);
3. only then move the checkpoint to the last position of the page.

A crash between 2 and 3 republishes that page after restart. Delivery is therefore
at-least-once and every consumer is idempotent by event_id; nothing is ever skipped,
because the checkpoint never passes a position whose message is not acknowledged.

Any table with its own gapless position can be relayed: a feed maps rows after a
position to messages for one topic (``EventsFeed`` here; reward records add theirs).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from sqlalchemy import Select, Table, bindparam, select
from sqlalchemy.engine import Connection, Engine, RowMapping
from sqlalchemy.exc import DBAPIError

from events.checkpoints import Checkpoints
from events.kafka_io import PublishFailed, event_headers, event_headers_of, event_to_bytes
from events.relay_wake import EVENTS, OutboxWaker, StepConnection
from events.store import EventStore
from kernel.db import reading

log = logging.getLogger(__name__)

Headers = tuple[tuple[str, bytes], ...]


class OutboxMessage(NamedTuple):
    """One message for Kafka (a tuple: built for every event the relay publishes, and a
    frozen dataclass's ``__init__`` cost more than the rest of the row's handling)."""

    position: int
    key: bytes
    value: bytes
    headers: Headers = ()


class OutboxFeed(Protocol):
    """A source of messages for one topic, ordered by a gapless commit-ordered position."""

    topic: str
    # The payload its writers notify with (events/relay_wake.py); "": they do not notify,
    # and the feed is read at every step.
    wake: str

    def read_after(self, position: int, limit: int,
                   conn: Connection | None = None) -> list[OutboxMessage]:
        """At most ``limit`` messages with position > ``position``, in position order;
        read on ``conn`` when given (the relay step's connection)."""
        ...


class Publisher(Protocol):
    def publish(self, topic: str, messages: Sequence[OutboxMessage]) -> None:
        """Return only once every message is acknowledged; raise PublishFailed otherwise."""
        ...


class EventsFeed:
    """The event log as an outbox: key = stream_id, value = the event's JSON as stored."""

    wake = EVENTS

    def __init__(self, store: EventStore, topic: str) -> None:
        self.store, self.topic = store, topic

    def read_after(self, position: int, limit: int,
                   conn: Connection | None = None) -> list[OutboxMessage]:
        read_wire = getattr(self.store, "read_wire", None)
        if read_wire is not None:  # the SQL store: the value assembled from the row's text
            return [OutboxMessage(w.position, w.stream_id.encode(), w.value,
                                  event_headers_of(w.type, w.schema_version))
                    for w in read_wire(position, limit, conn)]  # headers: one tuple per type
        # raw: publish what was stored and hashed; readers upcast after decoding.
        return [
            OutboxMessage(e.position, e.stream_id.encode(), event_to_bytes(e),
                          tuple(event_headers(e)))
            for e in self.store.read_all(position, limit, raw=True)
        ]


RowToMessage = Callable[[RowMapping], OutboxMessage]


class TableFeed:
    """Any append-only table with a gapless position column, e.g. reward records."""

    def __init__(self, engine: Engine, table: Table, position_column: str, topic: str,
                 to_message: RowToMessage, wake: str = "") -> None:
        self.engine, self.table, self.topic, self.to_message = engine, table, topic, to_message
        self.wake = wake
        self.position = table.c[position_column]
        # Built once per page size: the relay reads every feed on every step, and building
        # (and cache-keying) the statement each time cost more than the empty read itself.
        self._queries: dict[int, Select[Any]] = {}

    def read_after(self, position: int, limit: int,
                   conn: Connection | None = None) -> list[OutboxMessage]:
        query = self._queries.get(limit)
        if query is None:
            query = self._queries[limit] = (select(self.table).where(self.position > bindparam("after"))
                                            .order_by(self.position).limit(limit))
        with reading(self.engine, conn) as own:
            return [self.to_message(row._mapping) for row in own.execute(query, {"after": position})]


@dataclass(frozen=True)
class Progress:
    topic: str
    published: int
    position: int  # the feed's checkpoint after this step
    caught_up: bool  # the page was short: nothing more to read right now


def checkpoint_name(topic: str) -> str:
    return f"relay:{topic}"


class RelayLoop:
    """Publishes every feed's new rows, page by page, and checkpoints after each ack."""

    def __init__(self, feeds: Sequence[OutboxFeed], publisher: Publisher,
                 checkpoints: Checkpoints, page_size: int = 1000,
                 idle_interval: float = 0.05, max_backoff: float = 10.0,
                 before_publish: Callable[[], None] | None = None,
                 waker: OutboxWaker | None = None, fallback_s: float = 1.0,
                 linger_s: float = 0.0) -> None:
        """``before_publish`` runs before every page goes out and raises to stop it (the
        relay lock's ``check``: a relay that lost its lock must not publish another page).
        With a ``waker`` that listens (PostgreSQL), an idle relay waits for a commit's
        notification, reading anyway every ``fallback_s``; without one it polls every
        ``idle_interval`` (events/relay_wake.py). ``linger_s``: how long it lets commits
        gather after a notification before it reads them."""
        self.feeds, self.publisher, self.checkpoints = list(feeds), publisher, checkpoints
        self.page_size, self.idle_interval, self.max_backoff = page_size, idle_interval, max_backoff
        self.before_publish = before_publish
        self.waker, self.fallback_s, self.linger_s = waker, fallback_s, linger_s
        self.connection = StepConnection(getattr(checkpoints, "engine", None))
        self._full_read_at = 0.0  # monotonic time of the last step that read every feed

    def step(self, wakes: frozenset[str] | None = None) -> list[Progress]:
        """Relay at most one page of each feed; with ``wakes`` (what woke the relay: the
        feeds notified), of those feeds only (and those whose writers do not notify),
        unless no full read has been made for ``fallback_s``.

        Woken by single appends, the relay steps a hundred times a second, and the feeds
        nobody wrote to cost an empty read each (a quarter of the relay's CPU, when
        events were all that came). A feed whose notification is lost is still read at
        the next full read (``fallback_s``), which is what a lost notification costs."""
        now = time.monotonic()
        if wakes is None or "" in wakes or now - self._full_read_at >= self.fallback_s:
            feeds, self._full_read_at = self.feeds, now
        else:
            feeds = [feed for feed in self.feeds if not feed.wake or feed.wake in wakes]
        # Re-read each time: the rows are the truth (an operator may reset one to replay).
        # All feeds' in one query, and every query of the step on one connection: the
        # relay steps many times a second while it follows the log, and every round trip
        # takes CPU the writers need.
        conn = self.connection.get()
        names = [checkpoint_name(feed.topic) for feed in feeds]
        positions = self.checkpoints.load_many(names, conn) if names else {}
        return [self._step_feed(feed, name, positions[name], conn)
                for feed, name in zip(feeds, names, strict=True)]

    def _step_feed(self, feed: OutboxFeed, name: str, position: int,
                   conn: Connection | None) -> Progress:
        messages = feed.read_after(position, self.page_size, conn=conn)
        if messages:
            if self.before_publish is not None:
                self.before_publish()
            self.publisher.publish(feed.topic, messages)
            position = messages[-1].position
            self.checkpoints.save(name, position, conn)  # only after every message is acked
        return Progress(feed.topic, len(messages), position, len(messages) < self.page_size)

    def drain(self) -> list[Progress]:
        """Relay until every feed is caught up; return the totals per feed."""
        totals = {feed.topic: 0 for feed in self.feeds}
        try:
            while True:
                progress = self.step()
                for p in progress:
                    totals[p.topic] += p.published
                if all(p.caught_up for p in progress):
                    return [Progress(p.topic, totals[p.topic], p.position, True) for p in progress]
        finally:
            self.connection.close()

    def run(self, stop: threading.Event,
            on_progress: Callable[[Progress], None] | None = None) -> None:
        """Relay until ``stop`` is set; a page in flight is finished (acked and
        checkpointed) first. Kafka or database failures are retried with backoff; what
        ``before_publish`` raises (a lost lock) ends the loop."""
        if self.waker is not None:
            self.waker.start()  # LISTEN before the first read: no commit after it goes unheard
        backoff, wakes = self.idle_interval, None
        try:
            while not stop.is_set():
                try:
                    progress = self.step(wakes)
                except (PublishFailed, DBAPIError) as exc:
                    self.connection.close()  # it may be the part that failed
                    backoff = min(max(backoff * 2, 0.5), self.max_backoff)
                    log.warning("relay step failed (%s); retrying in %.1fs", exc, backoff)
                    stop.wait(backoff)
                    wakes = None
                    continue
                backoff = self.idle_interval
                for p in progress:
                    if p.published and on_progress is not None:
                        on_progress(p)
                # After a full page every feed is read again at once; after a wait, the
                # feeds that were notified (all of them when the wait timed out).
                wakes = self._idle(stop) if self._caught_up(progress) else None
        finally:
            self.connection.close()
            if self.waker is not None:
                self.waker.close()

    def _listening(self) -> bool:
        return self.waker is not None and self.waker.listening

    def _caught_up(self, progress: list[Progress]) -> bool:
        # Polling, wait only when there was nothing to publish: after a short page, events
        # that committed while it was in flight are already waiting, and sleeping would add
        # the interval to their commit -> Kafka latency (pages grow under load). Listening,
        # a short page is enough: those commits' notifications are queued and end the wait
        # at once, and an empty read after every page would cost round trips for nothing.
        if self._listening():
            return all(p.caught_up for p in progress)
        return not any(p.published for p in progress)

    def _idle(self, stop: threading.Event) -> frozenset[str] | None:
        """Wait for something to read: the feeds notified, or None for every feed."""
        if self.waker is not None and self._listening():
            return self.waker.wait(stop, self.fallback_s, self.linger_s) or None
        stop.wait(self.idle_interval)
        return None
