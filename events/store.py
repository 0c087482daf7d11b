"""The append-only event store: the port every reader and writer of the log goes through.

``events/sql_store.py`` is its adapter (SQLite and PostgreSQL). Other packages never
query the events table: what they need of the log (a subject's window, events by id,
the positions of some event types) is a method here, so there is one upcasting path,
one row mapping and one place that knows the schema.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass

from sqlalchemy.engine import Connection

from events.chain import VerifyReport, verify_chain
from events.model import NewEvent, RecordedEvent


@dataclass(frozen=True)
class Appended:
    event: RecordedEvent
    created: bool  # False when the event_id was already stored with the same content


@dataclass(frozen=True)
class Closer:
    """Where an event of a closing type sits: its position and its place in its stream."""

    position: int
    stream_id: str
    stream_seq: int


class EventStore(ABC):
    """The log: append batches atomically, read by id, stream, position or window."""

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
        """

    @abstractmethod
    def get(self, event_id: uuid.UUID) -> RecordedEvent | None: ...

    @abstractmethod
    def get_many(self, event_ids: Iterable[uuid.UUID | str],
                 conn: Connection | None = None) -> dict[str, RecordedEvent]:
        """The stored events among ``event_ids``, upcast, keyed by their id as text."""

    @abstractmethod
    def read_stream(self, stream_id: str, after_seq: int = 0, limit: int = 1000) -> list[RecordedEvent]: ...

    @abstractmethod
    def read_all(self, after: int = 0, limit: int = 1000, raw: bool = False) -> list[RecordedEvent]:
        """Events with position > ``after`` in position order; ``raw`` skips upcasting."""

    @abstractmethod
    def read_windows(self, reads: dict[str, tuple[int, int]],
                     episode_end: str) -> dict[str, list[RecordedEvent]]:
        """Per stream, given (first seq, stop seq): its events after the last ``episode_end``
        event before the first seq, up to seq ``stop``, in seq order, upcast.

        This is how the evaluators read the subjects a batch of events closes: one query
        for every stream of the batch (a read per stream cost as much as the scoring).
        """

    @abstractmethod
    def closers(self, types: Collection[str], after: int, upto: int, limit: int,
                newest_first: bool = False) -> list[Closer]:
        """Events of ``types`` with ``after < position <= upto``, oldest (or newest) first."""

    @abstractmethod
    def read_types(self, types: Collection[str], after: int = 0, limit: int = 1000) -> list[RecordedEvent]:
        """Events of ``types`` with position > ``after``, in position order, upcast."""

    @abstractmethod
    def streams_of_tenant(self, tenant: str) -> list[str]:
        """The ids of the streams that hold an event of ``tenant``, sorted."""

    @abstractmethod
    def head(self) -> int:
        """The last committed position (0 for an empty log)."""

    def iter_all(self, after: int = 0, page: int = 5000, raw: bool = False) -> Iterator[RecordedEvent]:
        while batch := self.read_all(after, page, raw):
            yield from batch
            after = batch[-1].position

    def verify(self) -> VerifyReport:
        """Re-check the whole chain from the stored bytes (no upcasting)."""
        return verify_chain(self.iter_all(raw=True))
