"""The event store in memory: the port's second adapter, for unit tests of the cores.

Same numbering, hashing and upcasting as the SQL adapter (``events.numbering``), kept
in lists; ``conn`` arguments are accepted and ignored (there is no transaction to join).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from events.catalogue import upcast_event
from events.chain import GENESIS_HASH
from events.model import NewEvent, RecordedEvent
from events.numbering import number_batch
from events.store import Appended, Closer, EventStore, Tail, end_types
from kernel.clock import utcnow


class InMemoryEventStore(EventStore):
    def __init__(self) -> None:
        self.events: list[RecordedEvent] = []  # index = position - 1
        self._by_id: dict[uuid.UUID, RecordedEvent] = {}
        self._lock = threading.Lock()

    def append(self, batch: Sequence[NewEvent], conn: Any = None) -> list[Appended]:
        with self._lock:
            heads: dict[str, int] = {}
            owners: dict[str, str | None] = {}
            for event in self.events:
                heads[event.stream_id] = event.stream_seq
                owners[event.stream_id] = event.metadata.tenant
            head_hash = self.events[-1].hash if self.events else GENESIS_HASH
            results = number_batch(batch, self._by_id, len(self.events), head_hash, heads, utcnow(),
                                   owners)
            for appended in results:
                if appended.created:
                    self.events.append(appended.event)
                    self._by_id[appended.event.event_id] = appended.event
            return results

    def get(self, event_id: uuid.UUID, tenant: str | None = None) -> RecordedEvent | None:
        found = self._by_id.get(event_id)
        return upcast_event(found) if found and _seen_by(found, tenant) else None

    def get_many(self, event_ids: Iterable[uuid.UUID | str], conn: Any = None,
                 raw: bool = False) -> dict[str, RecordedEvent]:
        found = (self._by_id.get(uuid.UUID(str(i))) for i in event_ids)
        return {str(e.event_id): e if raw else upcast_event(e) for e in found if e is not None}

    def read_stream(self, stream_id: str, after_seq: int = 0, limit: int = 1000,
                    tenant: str | None = None) -> list[RecordedEvent]:
        matching = [e for e in self.events if e.stream_id == stream_id and e.stream_seq > after_seq
                    and _seen_by(e, tenant)]
        return [upcast_event(e) for e in matching[:limit]]

    def read_all(self, after: int = 0, limit: int = 1000, raw: bool = False,
                 tenant: str | None = None) -> list[RecordedEvent]:
        page = [e for e in self.events[after:] if _seen_by(e, tenant)][:limit]
        return page if raw else [upcast_event(e) for e in page]

    def read_windows(self, reads: dict[str, tuple[int, int]],
                     episode_end: str | Collection[str]) -> dict[str, list[RecordedEvent]]:
        ends = end_types(episode_end)
        found: dict[str, list[RecordedEvent]] = {}
        for stream, (first, stop) in reads.items():
            events = [e for e in self.events if e.stream_id == stream]
            start = max((e.stream_seq for e in events
                         if e.stream_seq < first and e.type in ends), default=0)
            window = [upcast_event(e) for e in events if start < e.stream_seq <= stop]
            if window:
                found[stream] = window
        return found

    def closers(self, types: Collection[str], after: int, upto: int, limit: int,
                newest_first: bool = False, tenant: str | None = None, conn: Any = None) -> list[Closer]:
        matching = [Closer(e.position, e.stream_id, e.stream_seq) for e in self.events
                    if e.type in types and after < e.position <= upto and _seen_by(e, tenant)]
        return (matching[::-1] if newest_first else matching)[:limit]

    def stream_tails(self, prefixes: Sequence[str], after: int, upto: int,
                     limit: int) -> list[Tail]:
        last: dict[str, RecordedEvent] = {}
        moved: dict[str, int] = {}
        for e in self.events:
            if e.position <= upto and e.stream_id.startswith(tuple(prefixes)):
                last[e.stream_id] = e
                if e.position > after:
                    moved.setdefault(e.stream_id, e.position)
        order = sorted(moved, key=moved.__getitem__)[:limit]
        return [Tail(moved[stream], upcast_event(last[stream])) for stream in order]

    def read_types(self, types: Collection[str], after: int = 0, limit: int = 1000) -> list[RecordedEvent]:
        return [upcast_event(e) for e in self.events[after:] if e.type in types][:limit]

    def streams_of_tenant(self, tenant: str) -> list[str]:
        return sorted({e.stream_id for e in self.events if e.metadata.tenant == tenant})

    def head(self, tenant: str | None = None) -> int:
        return max((e.position for e in self.events if _seen_by(e, tenant)), default=0)


def _seen_by(event: RecordedEvent, tenant: str | None) -> bool:
    return tenant is None or event.metadata.tenant == tenant
