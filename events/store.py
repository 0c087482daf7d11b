"""The append-only event store: the port every reader and writer of the log goes through.

``events/sql_store.py`` is its adapter (SQLite and PostgreSQL). Other packages never
query the events table: what they need of the log (a subject's window, events by id,
the positions of some event types) is a method here, so there is one upcasting path,
one row mapping and one place that knows the schema.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Collection, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from sqlalchemy.engine import Connection

from events.catalogue import upcast_event
from events.chain import VerifyReport, verify_chain
from events.log_share import LogShare
from events.model import NewEvent, RecordedEvent


@dataclass(frozen=True)
class Appended:
    event: RecordedEvent
    created: bool  # False when the event_id was already stored with the same content


class Appender(Protocol):
    """What writes client batches: the store itself, or the API's group commit
    (``events.group_commit``), which has the same all-or-nothing answer per batch."""

    def append(self, batch: Sequence[NewEvent]) -> list[Appended]: ...


class ChainLink(NamedTuple):
    """An event's place in the hash chain: all a Merkle tree builder needs to read (a
    tuple: the builder reads one per event)."""

    position: int
    prev_hash: str
    hash: str


@dataclass(frozen=True)
class Closer:
    """Where an event of a closing type sits: its position and its place in its stream."""

    position: int
    stream_id: str
    stream_seq: int


def end_types(episode_end: str | Collection[str]) -> tuple[str, ...]:
    """One type or several, as a sorted tuple (a str is one type, not its letters)."""
    return (episode_end,) if isinstance(episode_end, str) else tuple(sorted(episode_end))


class Tail(NamedTuple):
    moved_at: int  # the position of its first event in the range asked about
    last: RecordedEvent


class EventStore(ABC):
    """The log: append batches atomically, read by id, stream, position or window.

    The read methods a client's request reaches take ``tenant``: given, only that
    tenant's events are seen (what a tenant's API key may read); ``None`` reads every
    tenant's (operators, and the server's own workers).
    """

    @abstractmethod
    def append(self, batch: Sequence[NewEvent], conn: Connection | None = None) -> list[Appended]:
        """Append all of ``batch`` or nothing.

        Args:
            batch: events in the order they should take positions.
            conn: an open transaction to join (so other rows commit with the events).
        Returns:
            One entry per input, in order; duplicates (same id, same content) come back
            as the stored event with ``created=False``.
        Raises:
            EventIdConflict: an event_id exists with different content.
            WrongExpectedSeq: an ``expected_seq`` does not match the stream.
            StreamOfAnotherTenant: a stream's last event names another tenant (every
                event of a stream belongs to one tenant).
        """

    @abstractmethod
    def get(self, event_id: uuid.UUID, tenant: str | None = None) -> RecordedEvent | None:
        """The event, upcast; None if it does not exist or belongs to another tenant."""

    @abstractmethod
    def get_many(self, event_ids: Iterable[uuid.UUID | str], conn: Connection | None = None,
                 raw: bool = False) -> dict[str, RecordedEvent]:
        """The stored events among ``event_ids``, keyed by their id as text; upcast unless
        ``raw`` (an auditor re-hashes events as stored)."""

    @abstractmethod
    def read_stream(self, stream_id: str, after_seq: int = 0, limit: int = 1000,
                    tenant: str | None = None) -> list[RecordedEvent]:
        """A stream's events with stream_seq > ``after_seq``, in seq order, upcast."""

    @abstractmethod
    def read_all(self, after: int = 0, limit: int = 1000, raw: bool = False,
                 tenant: str | None = None) -> list[RecordedEvent]:
        """Events with position > ``after`` in position order; ``raw`` skips upcasting."""

    @abstractmethod
    def read_windows(self, reads: dict[str, tuple[int, int]],
                     episode_end: str | Collection[str]) -> dict[str, list[RecordedEvent]]:
        """Per stream, given (first seq, stop seq): its events after the last event of a type
        in ``episode_end`` (one type, or several) before the first seq, up to seq ``stop``,
        in seq order, upcast.

        This is how the evaluators read the subjects a batch of events closes: one query
        for every stream of the batch (a read per stream cost as much as the scoring).
        """

    @abstractmethod
    def closers(self, types: Collection[str], after: int, upto: int, limit: int,
                newest_first: bool = False, tenant: str | None = None,
                conn: Connection | None = None) -> list[Closer]:
        """Events of ``types`` with ``after < position <= upto``, oldest (or newest) first
        (``conn``: the caller's transaction)."""

    @abstractmethod
    def stream_tails(self, prefixes: Sequence[str], after: int, upto: int,
                     limit: int) -> list[Tail]:
        """Each stream whose id starts with one of ``prefixes`` and that has an event in
        ``(after, upto]``: the position of the first such event and its last event up to
        ``upto`` (``limit`` streams at most, those that moved first first)."""

    @abstractmethod
    def read_types(self, types: Collection[str], after: int = 0, limit: int = 1000) -> list[RecordedEvent]:
        """Events of ``types`` with position > ``after``, in position order, upcast."""

    @abstractmethod
    def streams_of_tenant(self, tenant: str) -> list[str]:
        """The ids of the streams that hold an event of ``tenant``, sorted."""

    @abstractmethod
    def head(self, tenant: str | None = None) -> int:
        """The last committed position (0 for an empty log), or the tenant's last one."""

    def chain_link(self, event_id: uuid.UUID, conn: Connection | None = None) -> ChainLink | None:
        """Where an event sits in the chain (position, prev_hash, hash); None if unknown.
        Adapters should read only those columns: an inclusion proof starts here."""
        event = self.get(event_id)
        return None if event is None else ChainLink(event.position, event.prev_hash, event.hash)

    def chain_links(self, after: int, limit: int, conn: Connection | None = None) -> list[ChainLink]:
        """(position, prev_hash, hash) of the events after ``after``, in position order.

        Adapters should read only these three columns: the Merkle tree builder follows the
        whole log with it. ``conn``: the caller's open transaction.
        """
        return [ChainLink(e.position, e.prev_hash, e.hash) for e in self.read_all(after, limit, raw=True)]

    def of_types(self, types: Collection[str], streams: Collection[str] | None = None,
                 raw: bool = True, conn: Connection | None = None) -> list[RecordedEvent]:
        """Every event of ``types`` (on ``streams`` when given) in position order, as stored
        unless ``raw`` is False: what an auditor compares projection rows with, one read per
        kind of row, and what a replay of the projections reads (``conn``: the caller's
        transaction, so the events and the rows compared with them are one snapshot).
        Adapters should answer from the type and stream indexes."""
        wanted, on = set(types), None if streams is None else set(streams)
        return [e if raw else upcast_event(e) for e in self.iter_all(raw=True)
                if e.type in wanted and (on is None or e.stream_id in on)]

    def scan_types(self, types: Collection[str], conn: Connection | None = None,
                   page: int = 200, after: int = 0) -> Iterator[RecordedEvent]:
        """What ``of_types`` returns (every stream, as stored; those after position
        ``after``), handed out a page of ``page`` events at a time: a replay of the whole
        log holds one page, not the log. ``conn``: the caller's transaction (one snapshot
        with what it compares)."""
        yield from (e for e in self.of_types(types, conn=conn) if e.position > after)

    def at_positions(self, positions: Collection[int], conn: Connection | None = None
                     ) -> dict[int, RecordedEvent]:
        """The events at ``positions`` (those that exist), as stored, by position: what an
        auditor's sample of the log reads. Adapters should read them in one query."""
        wanted = set(positions)
        return {e.position: e for e in self.iter_all(raw=True) if e.position in wanted}

    def read_share(self, share: LogShare, after: int, limit: int) -> tuple[list[RecordedEvent], int]:
        """The events of ``share`` (events/log_share.py) with position > ``after``, in
        position order, upcast; and how far the log was read.

        One read covers at most ``limit`` x N positions (N: the share's count, so about
        ``limit`` of its events when streams spread evenly) and stops at the head as it
        was when the read began: every position up to it was committed by then, so
        nothing of the share up to it can come later. How far: the last event's position
        when ``limit`` were found, else the end of those positions. (Without the bound,
        PostgreSQL would filter the whole rest of the log on every read, until it has
        statistics saying the rows are many.)

        This one reads every event of those positions and filters; adapters should filter
        in the query.
        """
        horizon = min(self.head(), after + limit * share.count)
        found: list[RecordedEvent] = []
        while after < horizon:
            page = self.read_all(after, min(limit, horizon - after))
            if not page:
                break
            for event in page:
                if event.position > horizon:
                    return found, horizon
                if share.holds(event.stream_id):
                    found.append(event)
                    if len(found) == limit:
                        return found, event.position
            after = page[-1].position
        return found, horizon

    def scan_all(self, after: int = 0, limit: int = 1000,
                 tenant: str | None = None) -> Generator[RecordedEvent, None, None]:
        """What ``read_all`` returns, handed out as it is read: a reader that stops early
        (a page full of bytes) never holds the rest. Read it to the end, or close it, to
        release what it holds (the SQL store's connection)."""
        yield from self.read_all(after, limit, tenant=tenant)

    def scan_stream(self, stream_id: str, after_seq: int = 0, limit: int = 1000,
                    tenant: str | None = None) -> Generator[RecordedEvent, None, None]:
        """What ``read_stream`` returns, handed out as it is read (see ``scan_all``)."""
        yield from self.read_stream(stream_id, after_seq, limit, tenant)

    def iter_all(self, after: int = 0, page: int = 5000, raw: bool = False) -> Iterator[RecordedEvent]:
        while batch := self.read_all(after, page, raw):
            yield from batch
            after = batch[-1].position

    def verify(self) -> VerifyReport:
        """Re-check the whole chain from the stored bytes (no upcasting)."""
        return verify_chain(self.iter_all(raw=True))
