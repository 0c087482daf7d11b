"""Group commit: concurrent appends of one process share a transaction.

Every append takes the log's writer lock until its commit, so appends run one at a
time however many requests arrive together, and each pays the lock hand-over, the
round trips and the commit's WAL flush alone. Here the requests that arrive while one
transaction is in flight wait, and the next transaction stores all of them: under load
a commit carries many requests, alone a request goes straight through (no timer).

Each request keeps its own all-or-nothing answer. Its batch is numbered after the
batches before it in the group; one that is refused (a conflict, a wrong expected seq,
another tenant's stream) gets its error and leaves the others' numbering as if it had
never come. If the transaction itself fails (the database refuses a row, or is down),
each request of the group is tried again alone, so a bad one fails only itself.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

from events.errors import EventLogError
from events.model import NewEvent
from events.numbering import Prepared, prepare_batch
from events.store import Appended


class PreparedAppender(Protocol):
    def append_prepared(self, batches: Sequence[Sequence[Prepared]],
                        ) -> list[list[Appended] | EventLogError]: ...


class _Request:
    __slots__ = ("batch", "wake", "lead", "outcome")

    def __init__(self, batch: list[Prepared]) -> None:
        self.batch = batch
        self.wake = threading.Event()  # set once: to lead the next group, or when done
        self.lead = False
        self.outcome: list[Appended] | BaseException | None = None


class GroupCommit:
    """``append`` as ``EventStore.append`` (without ``conn``), grouped; thread-safe.

    No thread of its own: the first request to find no transaction in flight commits
    (it leads), and when it is done it hands the lead to the request that has waited
    longest, whose group is everything queued by then (up to ``max_events``).
    """

    def __init__(self, store: PreparedAppender, max_events: int = 5000) -> None:
        self.store, self.max_events = store, max_events
        self._lock = threading.Lock()
        self._queue: list[_Request] = []
        self._busy = False  # a leader is committing; while False the queue is empty

    def append(self, batch: Sequence[NewEvent]) -> list[Appended]:
        request = _Request(prepare_batch(batch))  # in the caller's thread, before queueing
        with self._lock:
            self._queue.append(request)
            request.lead, self._busy = not self._busy, True
        while request.outcome is None:
            if request.lead:
                request.lead = False
                self._commit_group()
            else:
                request.wake.wait()
                request.wake.clear()
        if isinstance(request.outcome, BaseException):
            raise request.outcome
        return request.outcome

    def _commit_group(self) -> None:
        with self._lock:
            group, self._queue = self._split(self._queue)
        try:
            outcomes = self._store(group)
        except BaseException as exc:  # never leave a waiting request without an answer
            outcomes = [exc] * len(group)
        for request, outcome in zip(group, outcomes, strict=True):
            request.outcome = outcome
        with self._lock:
            if self._queue:
                self._queue[0].lead = True
                self._queue[0].wake.set()
            else:
                self._busy = False
        for request in group:
            request.wake.set()

    def _split(self, queue: list[_Request]) -> tuple[list[_Request], list[_Request]]:
        taken, events = 0, 0
        for request in queue:
            if taken and events + len(request.batch) > self.max_events:
                break
            taken, events = taken + 1, events + len(request.batch)
        return queue[:taken], queue[taken:]

    def _store(self, group: list[_Request]) -> Sequence[list[Appended] | BaseException]:
        try:
            return self.store.append_prepared([r.batch for r in group])
        except Exception as exc:
            if len(group) == 1:
                return [exc]
            return [self._alone(r) for r in group]  # a row the database refuses fails only its own

    def _alone(self, request: _Request) -> list[Appended] | BaseException:
        try:
            [outcome] = self.store.append_prepared([request.batch])
        except Exception as exc:
            return exc
        return outcome
