"""Waking the relay when an outbox grows, and the one connection each relay step uses.

Polling every 50 ms cost the relay about two dozen database round trips per idle step
(a pooled connection per query: pre-ping, BEGIN, the query, ROLLBACK, for each of its
feeds and its checkpoints). On a small machine those compete for the CPUs with the API
and PostgreSQL, and they still left up to 50 ms between a commit and the relay's read.

On PostgreSQL every append transaction instead issues ``pg_notify(OUTBOX_CHANNEL, feed)``.
PostgreSQL delivers a notification only when its transaction commits (never for a rolled
back one) and the relay, which LISTENs on a dedicated connection, wakes as soon as it
arrives. A notification carries only the name of the outbox that grew (``EVENTS``,
``REWARDS``, ``CHECKPOINTS``: a feed's ``wake``), and means "read that one again": the
relay woken by single appends reads the event log alone, not also two empty tables at
every step. The rows stay the truth, so one lost (the listening connection dropped, a
writer that does not notify) costs latency, never a message, because the relay also
reads every feed after ``fallback_s`` without one, however busy the others keep it.
SQLite has no notifications; its relay keeps polling.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from kernel.db import is_postgres, is_psycopg

log = logging.getLogger(__name__)

OUTBOX_CHANNEL = "hcp_outbox"  # the SQL store's append notifies it with its lock (events/sql_append.py)
# What a notification's payload names: the outbox whose table grew (a feed's ``wake``), so
# that the relay reads only that one; an empty payload (a writer that names none) means
# every feed.
EVENTS, REWARDS, CHECKPOINTS = "events", "rewards", "checkpoints"
_NOTIFY = text("SELECT pg_notify(:channel, :feed)")

# A wait is cut into slices this long so that ``stop`` is honoured promptly (each slice is
# a poll() on the socket, not a round trip).
_SLICE_S = 0.25


def notify_outbox(conn: Connection, feed: str) -> None:
    """Inside a transaction appending to ``feed``'s table: wake the relay when (and only
    if) it commits."""
    if is_postgres(conn):
        conn.execute(_NOTIFY, {"channel": OUTBOX_CHANNEL, "feed": feed})


def notify_statement(feed: str) -> tuple[str, tuple[str, ...]]:
    """``notify_outbox`` for kernel.sql.pipelined: rides in a writer's existing round trip."""
    return ("SELECT pg_notify(%s, %s)", (OUTBOX_CHANNEL, feed))


class OutboxWaker:
    """Waits for a commit notification on its own connection (PostgreSQL with psycopg), or
    for the fallback time (SQLite, another driver, or while that connection is down)."""

    def __init__(self, engine: Engine, channel: str = OUTBOX_CHANNEL) -> None:
        self.engine, self.channel = engine, channel
        self.listening = is_postgres(engine) and is_psycopg(engine)
        self._conn: Connection | None = None

    def start(self) -> None:
        """LISTEN now (before the relay's first read), so no commit after it goes unheard."""
        if self.listening:
            self._listener()

    def wait(self, stop: threading.Event, timeout: float, linger: float = 0.0) -> frozenset[str]:
        """Until a commit is notified, or ``timeout`` passes or ``stop`` is set: the feeds
        the notifications named (empty when none came; ``""`` among them: every feed).

        After a notification it lingers ``linger`` s, so that a trickle of commits makes one
        relay step (and one Kafka request) rather than one each; then every notification
        queued by then is consumed, since the read that follows covers their commits.
        Commits notified while the relay's last step ran have had that step's time to
        gather already: for them it returns at once (lingering there only added ``linger``
        to every event's commit -> Kafka latency under steady load)."""
        raw = self._listener() if self.listening else None
        if raw is None:
            stop.wait(timeout)
            return _NONE
        deadline = time.monotonic() + timeout
        try:
            if queued := _consume_queued(raw):
                return queued
            while not stop.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    return _NONE
                first = {n.payload for n in raw.notifies(timeout=min(left, _SLICE_S), stop_after=1)}
                if first:
                    if linger > 0:
                        stop.wait(linger)
                    return frozenset(first) | _consume_queued(raw)  # the next read covers them
        except Exception as exc:  # a dead socket fails in driver-specific ways; poll meanwhile
            log.warning("the relay's LISTEN connection failed (%s); polling until it is back", exc)
            self.close()
            stop.wait(max(0.0, deadline - time.monotonic()))
        return _NONE

    def close(self) -> None:
        conn, self._conn = self._conn, None
        _discard(conn)

    def _listener(self) -> Any:
        if self._conn is None:
            try:
                conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
                conn.exec_driver_sql(f'LISTEN "{self.channel}"')
            except DBAPIError as exc:
                log.warning("cannot LISTEN for the outbox (%s); polling meanwhile", exc)
                return None
            self._conn = conn
        return self._conn.connection.driver_connection


class StepConnection:
    """One autocommit connection for all of a relay step's reads and its checkpoint save
    (PostgreSQL), instead of a pooled checkout, BEGIN and ROLLBACK for each; kept across
    steps and replaced after a database error. On SQLite ``get`` is None: there a held
    connection would hold the file's lock, so each query takes its own as before."""

    def __init__(self, engine: Engine | None) -> None:
        self.engine = engine if engine is not None and is_postgres(engine) else None
        self._conn: Connection | None = None

    def get(self) -> Connection | None:
        if self.engine is None:
            return None
        if self._conn is None:
            self._conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        return self._conn

    def close(self) -> None:
        """Drop the connection (after an error it may be dead); the next ``get`` reconnects."""
        conn, self._conn = self._conn, None
        _discard(conn)


def _consume_queued(raw: Any) -> frozenset[str]:
    """Consume the notifications already received, without waiting: the feeds they named.

    One ``notifies(timeout=0)`` polls the socket once and may yield just one of several
    queued notifications (psycopg 3.3): poll until a poll finds none."""
    found: set[str] = set()
    while polled := {n.payload for n in raw.notifies(timeout=0.0)}:
        found |= polled
    return frozenset(found)


_NONE: frozenset[str] = frozenset()


def _discard(conn: Connection | None) -> None:
    if conn is None:
        return
    try:
        conn.invalidate()  # never back into the pool: it LISTENs, or it failed
        conn.close()
    except Exception as exc:  # a dead socket may fail in any way; it is dropped regardless
        log.debug("closing a relay connection: %s", exc)
