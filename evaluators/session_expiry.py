"""Sessions of outside traffic that end by themselves: ``session.expired``, written once.

A stock client never says that its conversation is over, so a session of outside traffic
(the chat gateway's ``session-<uuid>``, OTLP's ``otel:…``) whose last event is older than
the serving contract's ``harness.sessions.idle_timeout`` is ended by the server: one
``session.expired`` event on the stream, which closes its open turn and episode
(contract/subject.py). The clock is read only here, by the writer; scoring reads the log,
so every worker and every replay cuts the same subjects.

Exactly once, with any number of processes sweeping: the event's id is derived from the
stream and the seq it expires, and it is appended with ``expected_seq`` at that seq, so a
second writer finds it there (the same id: nothing added) and a turn that arrived in the
meantime makes the append fail (the session is not idle any more; nothing is written).

The sweep follows the log with a checkpoint: streams whose last event is at or before
it are ended or expired already, so each sweep reads only the streams that moved since
the oldest session still open.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import ClassVar

from contract.vocabulary import EPISODE_ENDS
from events.errors import EventIdConflict, WrongExpectedSeq
from events.model import EventMetadata, RecordedEvent
from events.server_events import ServerEvent
from events.store import EventStore
from kernel.clock import utc, utcnow

log = logging.getLogger(__name__)

# Streams of traffic the server did not write a harness for: the gateway's and OTLP's.
OUTSIDE_STREAMS = ("session-", "otel:")
CHECKPOINT = "session-expiry"
ACTOR = "system:sessions"
PAGE = 5000
NAMESPACE = uuid.UUID("2a9e5c1f-7d34-4b8e-9f02-5c6d7e8f9a10")  # fixed: ids must not change


class SessionExpired(ServerEvent):
    TYPE: ClassVar[str] = "session.expired"
    SUMMARY: ClassVar[str] = ("A session of outside traffic was idle for its contract's "
                              "idle timeout: its open turn and episode end here")

    idle_timeout_s: int
    last_seq: int  # the seq of the event it follows
    last_event_at: str  # when that event was recorded (ISO 8601)
    contract: str | None = None  # the serving version whose timeout applied (name@N)


@dataclass(frozen=True)
class Timeout:
    seconds: int
    contract: str | None  # name@version that set it


@dataclass(frozen=True)
class Sweep:
    expired: int
    still_open: int
    checkpoint: int


class Checkpoint:
    """Where the sweep resumes: load and save of one named position."""

    def __init__(self, load: Callable[[], int], save: Callable[[int], None]) -> None:
        self.load, self.save = load, save


def expired_id(stream_id: str, last_seq: int) -> uuid.UUID:
    return uuid.uuid5(NAMESPACE, f"{stream_id}|{last_seq}")


class SessionExpiry:
    def __init__(self, store: EventStore, timeout: Callable[[], Timeout | None],
                 checkpoint: Checkpoint, clock: Callable[[], datetime] = utcnow) -> None:
        self.store, self.timeout, self.checkpoint, self.clock = store, timeout, checkpoint, clock

    def sweep(self) -> Sweep:
        """Expire every idle session; move the checkpoint to just before the oldest open one."""
        timeout = self.timeout()
        after = self.checkpoint.load()
        if timeout is None:  # no idle timeout in force: nothing ends by itself
            return Sweep(0, 0, after)
        upto = self.store.head()
        now = utc(self.clock())
        cutoff = now - timedelta(seconds=timeout.seconds)
        tails = self.store.stream_tails(OUTSIDE_STREAMS, after, upto, PAGE)
        expired, still_open = 0, []
        for _, tail in tails:
            if tail.type in EPISODE_ENDS:
                continue
            if utc(tail.recorded_at) <= cutoff and self._expire(tail, timeout):
                expired += 1
            else:  # not idle long enough, or it moved on while we looked: see it again
                still_open.append(tail.position)
        # A full page leaves the streams that moved after its last one for the next sweep.
        reached = upto if len(tails) < PAGE else tails[-1].moved_at
        mark = min([reached, *(p - 1 for p in still_open)])
        if mark > after:
            self.checkpoint.save(mark)
        return Sweep(expired, len(still_open), max(mark, after))

    def _expire(self, tail: RecordedEvent, timeout: Timeout) -> bool:
        """Append the stream's ``session.expired``; False when the stream moved on first."""
        event = SessionExpired(idle_timeout_s=timeout.seconds, last_seq=tail.stream_seq,
                               last_event_at=utc(tail.recorded_at).isoformat(),
                               contract=timeout.contract)
        meta = EventMetadata(actor=ACTOR, tenant=tail.metadata.tenant,
                             specialist=tail.metadata.specialist,
                             adapter_version=tail.metadata.adapter_version,
                             contract=tail.metadata.contract,
                             correlation_id=tail.metadata.correlation_id)
        new = replace(event.new_event(tail.stream_id, meta, expected_seq=tail.stream_seq),
                      event_id=expired_id(tail.stream_id, tail.stream_seq))
        try:
            self.store.append([new])
        except WrongExpectedSeq:
            return False  # a turn came in between (or another sweeper's expiry did): not idle
        except EventIdConflict:
            log.warning("session.expired of %s at seq %d is stored with other content",
                        tail.stream_id, tail.stream_seq)
            return False
        return True
