"""Log readers: how consumers (evaluator workers …) follow the event log.

One port, two adapters:

* ``KafkaLogReader`` reads ``<prefix>.events`` in a consumer group (service stack);
* ``DatabaseLogReader`` tails the events table by position (embedded mode).

The contract is the same for both: ``poll`` hands out records after the ones already
handed out; ``commit`` marks everything handed out so far as processed, so call it only
once the results are durable; a reader reopened under the same name resumes after the
last commit, and whatever was polled but not committed comes again (at-least-once:
consumers are idempotent by event_id). Order is per stream (stream_seq order), which is
all Kafka guarantees across partitions; the database reader happens to give global
position order.
"""

from __future__ import annotations

import logging
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import partial
from types import TracebackType
from typing import Any, ClassVar, Generic, Self, TypeVar

from kafka import ConsumerRebalanceListener, OffsetAndMetadata, TopicPartition
from kafka.errors import CommitFailedError, KafkaError
from sqlalchemy.engine import Connection, Engine

from events.catalogue import upcast_event
from events.checkpoints import Checkpoints
from events.kafka_io import event_from_bytes, make_consumer
from events.log_share import LogShare
from events.model import RecordedEvent
from events.store import EventStore

log = logging.getLogger(__name__)

T = TypeVar("T")

# Opens the transaction for a batch's results that also commits the batch's position.
ResultsTransaction = Callable[[], AbstractContextManager[Connection]]


class LogReader(ABC, Generic[T]):
    """A consumer's view of a log; commit only what has been durably processed.

    Besides reading, a consumer asks its reader what it can promise (the evaluator does:
    evaluators/evaluator.py). The defaults promise nothing, as a reader whose position
    lives outside the database (Kafka offsets) cannot.
    """

    # Whether every event of the contract streams comes to this reader, in log position
    # order: then a batch without one has changed nothing that such an event changes.
    sees_every_contract_event: ClassVar[bool] = False

    @abstractmethod
    def poll(self, max_records: int = 500, timeout: float = 1.0) -> list[T]:
        """Up to ``max_records`` records after those already returned; [] if none arrive
        within ``timeout`` seconds."""

    @abstractmethod
    def commit(self) -> None:
        """Mark every record returned by ``poll`` so far as processed."""

    @abstractmethod
    def rewind(self) -> None:
        """Forget what was polled since the last commit: the next poll returns it again."""

    @abstractmethod
    def close(self) -> None:
        """Release connections; does not commit."""

    def results_transaction(self) -> ResultsTransaction | None:
        """A transaction, to be opened later (from another thread too), for the results of
        everything polled so far that also commits it: exactly-once. None: the reader
        commits only by ``commit``, which the consumer calls once the results are durable."""
        return None

    def caught_up(self) -> bool:
        """Whether everything there is to read right now has been handed out; False when
        the reader cannot tell."""
        return False

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


class LogUnavailable(RuntimeError):
    """The log cannot be read or committed to now (its broker is away). Nothing is lost:
    what was polled and not committed is committed later or comes again; try again later."""


# How long an offset commit may wait for the broker before it counts as failed (and is
# tried again at the next step): an unreachable broker must not hold the worker forever.
COMMIT_TIMEOUT_MS = 30_000


def decode_event(value: bytes) -> RecordedEvent:
    """A Kafka value back into an event, upcast like the database log's readers see it."""
    return upcast_event(event_from_bytes(value))


class KafkaRecordReader(LogReader[T]):
    """A consumer-group member of one topic; offsets are committed only on ``commit``."""

    def __init__(self, bootstrap: str, topic: str, group_id: str,
                 decode: Callable[[bytes], T], **consumer_config: Any) -> None:
        self.decode = decode
        self.consumer = make_consumer(bootstrap, group_id, **consumer_config)
        self.consumer.subscribe([topic], listener=_ForgetRevoked(self))
        self.first_pending: dict[TopicPartition, int] = {}  # first offset polled, uncommitted
        self.next_offset: dict[TopicPartition, int] = {}  # what commit() will store

    def poll(self, max_records: int = 500, timeout: float = 1.0) -> list[T]:
        try:
            batches = self.consumer.poll(timeout_ms=int(timeout * 1000), max_records=max_records)
        except KafkaError as exc:
            raise LogUnavailable(f"polling the topic failed: {exc!r}") from exc
        out: list[T] = []
        for tp, records in batches.items():
            if not records:
                continue
            self.first_pending.setdefault(tp, records[0].offset)
            self.next_offset[tp] = records[-1].offset + 1
            out.extend(self.decode(r.value) for r in records)
        return out

    def commit(self) -> None:
        """Also raises ``LogUnavailable`` when the broker cannot be reached: the offsets are
        kept, and the next ``commit`` (or poll's commit, or rewind) takes them up again.
        Should the group rebalance meanwhile, the partitions' next owner reads from the
        previous commit: redelivery, which idempotent consumers absorb."""
        if not self.next_offset:
            return
        offsets = {tp: OffsetAndMetadata(o, "", -1) for tp, o in self.next_offset.items()}
        try:
            self.consumer.commit(offsets, timeout_ms=COMMIT_TIMEOUT_MS)
        except CommitFailedError as exc:
            # The group rebalanced: another member now owns these partitions and will
            # read from the previous commit. Redelivery is safe (idempotent consumers).
            log.warning("offset commit lost to a rebalance: %s", exc)
        except KafkaError as exc:
            raise LogUnavailable(f"the offset commit failed ({exc!r}); it is tried again") from exc
        self.forget(list(self.next_offset))

    def rewind(self) -> None:
        for tp, offset in self.first_pending.items():
            self.consumer.seek(tp, offset)
        self.forget(list(self.first_pending))

    def forget(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.first_pending.pop(tp, None)
            self.next_offset.pop(tp, None)

    def caught_up(self) -> bool:
        assigned = self.consumer.assignment()
        if not assigned:
            return False
        ends = self.consumer.end_offsets(list(assigned))
        return all(self.consumer.position(tp) >= ends[tp] for tp in assigned)

    def close(self) -> None:
        self.consumer.close(autocommit=False)


def checkpoint_name(name: str, share: LogShare | None) -> str:
    """The checkpoint row of a database reader named ``name``, reading ``share``."""
    if share is None:
        return f"reader:{name}"
    return f"reader:{name}/{share.index}-of-{share.count}"


def _start(checkpoints: Checkpoints, family: str, own: str) -> int:
    """Where a database reader starts: the furthest point that its own checkpoint, or
    every share of some split of the same name, has been read up to.

    A split of N shares has read every event up to the lowest of its N checkpoints (a
    share with none has read nothing), the streams of each being one share's; so does
    the reader without a share up to its one. Any of those points is safe to start from.
    """
    found = checkpoints.load_family(family)
    splits: dict[int, dict[int, int]] = {}
    for name, position in found.items():
        match = _SHARE_NAME.fullmatch(name[len(family):])
        if match is not None:
            splits.setdefault(int(match[2]), {})[int(match[1])] = position
    read = [min(shares.get(k, 0) for k in range(count)) for count, shares in splits.items()]
    return max([found.get(own, 0), found.get(family, 0), *read])


_SHARE_NAME = re.compile(r"/(\d+)-of-(\d+)")


class _ForgetRevoked(ConsumerRebalanceListener):
    # A revoked partition's uncommitted records go to its next owner; committing them
    # from here later would be refused anyway.
    def __init__(self, reader: KafkaRecordReader[Any]) -> None:
        self.reader = reader

    def on_partitions_revoked(self, revoked: list[TopicPartition]) -> None:
        self.reader.forget(list(revoked))

    def on_partitions_assigned(self, assigned: list[TopicPartition]) -> None:
        pass


class KafkaLogReader(KafkaRecordReader[RecordedEvent]):
    """The event topic (``settings.events_topic``) in consumer group ``group_id``."""

    def __init__(self, bootstrap: str, topic: str, group_id: str, **consumer_config: Any) -> None:
        super().__init__(bootstrap, topic, group_id, decode_event, **consumer_config)


class DatabaseLogReader(LogReader[RecordedEvent]):
    """Tails the events table by position; its checkpoint is the row ``reader:<name>``.

    Positions are gapless and commit-ordered (see events/relay.py), so "after the last
    position seen" never skips an event that commits late.

    ``share``: only that share of the log's streams (events/log_share.py), for N
    processes that follow the log together; its checkpoint is ``reader:<name>/K-of-N``.
    The position then moves past the other shares' events too (``read_share``'s
    horizon), so ``position`` is how far the log has been read, as without a share.

    A reader starts from its checkpoint, or from further on when the processes of the same
    name split some other way have all read further (``_start``): after changing the
    number of processes nothing is skipped, and little is read again (what is, is
    re-scored to rewards that already exist, which the reward store skips).
    """

    # The log in position order, or a share of it, and every share holds the contract
    # streams (events/log_share.py).
    sees_every_contract_event = True

    def __init__(self, engine: Engine, store: EventStore, name: str,
                 poll_interval: float = 0.05, share: LogShare | None = None) -> None:
        self.store, self.poll_interval = store, poll_interval
        self.share = share if share is not None and share.count > 1 else None  # 0/1: the whole log
        self.checkpoints, self.name = Checkpoints(engine), checkpoint_name(name, self.share)
        self.committed = self.position = _start(self.checkpoints, f"reader:{name}", self.name)

    def poll(self, max_records: int = 500, timeout: float = 1.0) -> list[RecordedEvent]:
        deadline = time.monotonic() + timeout
        while True:
            if self.share is None:
                events = self.store.read_all(self.position, max_records)
                horizon = events[-1].position if events else self.position
            else:
                events, horizon = self.store.read_share(self.share, self.position, max_records)
            if events:
                self.position = horizon
                return events
            if horizon > self.position:  # only other shares' events there: read on at once
                self.position = horizon
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            time.sleep(min(self.poll_interval, remaining))

    @contextmanager
    def committing(self, position: int | None = None) -> Iterator[Connection]:
        """A transaction for the results of everything polled up to ``position`` (default:
        everything polled so far) that also commits that position (exactly-once against
        the database, and one commit rather than two).

        A consumer that polls on while an earlier batch's results are saved hands that
        batch's position over: it is taken as given, never read from the reader here,
        which has moved on. Call ``rewind`` only once no such transaction is open.
        """
        position = self.position if position is None else position
        if not self.committed <= position <= self.position:
            raise ValueError(f"position {position} is not between the committed "
                             f"{self.committed} and the polled {self.position}")
        with self.checkpoints.engine.begin() as conn:
            yield conn
            if position != self.committed:
                self.checkpoints.save(self.name, position, conn)
        self.committed = position

    def results_transaction(self) -> ResultsTransaction:
        """``committing`` the position polled so far, to be opened later."""
        return partial(self.committing, self.position)

    def caught_up(self) -> bool:
        return self.position >= self.store.head()

    def commit(self, conn: Connection | None = None) -> None:
        """Also takes the transaction that writes the results: then it is exactly-once."""
        if self.position == self.committed:
            return
        self.checkpoints.save(self.name, self.position, conn)
        if conn is None:
            # With a caller's transaction we cannot know it will commit; ``rewind`` then
            # goes back to the older checkpoint, which only means redelivery.
            self.committed = self.position

    def rewind(self) -> None:
        self.position = self.committed

    def close(self) -> None:
        pass

