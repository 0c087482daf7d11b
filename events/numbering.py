"""Numbering a batch before it is stored: duplicates, optimistic concurrency, positions, hashes.

Pure: every store adapter reads the log head, the stream heads and the already-stored
events of the batch (under its writer lock) and hands them here; what comes back is
what to store, in order, each event chained to the one before.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from events.chain import chain_hash, payload_digest
from events.errors import EventIdConflict, StreamOfAnotherTenant, WrongExpectedSeq
from events.model import EventMetadata, NewEvent, RecordedEvent
from events.store import Appended
from kernel.clock import utc


def number_batch(batch: Sequence[NewEvent], existing: dict[uuid.UUID, RecordedEvent],
                 head_position: int, head_hash: str, stream_seqs: dict[str, int],
                 now: datetime, stream_tenants: dict[str, str | None] | None = None,
                 ) -> list[Appended]:
    """One ``Appended`` per input: stored duplicates as they are, new events numbered.

    ``stream_tenants`` holds the tenant of each existing stream's last event: a stream
    belongs to one tenant, so an event naming another is refused (a stream first written
    by a batch belongs to the tenant of its first event).

    Raises:
        EventIdConflict: an event_id is stored (or repeated in the batch) with other content.
        WrongExpectedSeq: an ``expected_seq`` does not match its stream's head.
        StreamOfAnotherTenant: the stream belongs to another tenant.
    """
    known, seqs, owners = dict(existing), dict(stream_seqs), dict(stream_tenants or {})
    position, prev_hash = head_position, head_hash
    results: list[Appended] = []
    for index, new in enumerate(batch):
        stored = known.get(new.event_id)
        if stored is not None:
            if not same_content(stored, new):
                raise EventIdConflict(new.event_id, index)
            results.append(Appended(stored, created=False))
            continue
        current = seqs.get(new.stream_id, 0)
        if current and stream_tenants is not None and owners.get(new.stream_id) != new.metadata.tenant:
            raise StreamOfAnotherTenant(new.stream_id, index)
        owners[new.stream_id] = new.metadata.tenant
        if new.expected_seq is not None and new.expected_seq != current:
            raise WrongExpectedSeq(new.stream_id, new.expected_seq, current, index)
        position += 1
        seqs[new.stream_id] = current + 1
        event = record(new, position, current + 1, now, prev_hash)
        prev_hash = event.hash
        known[new.event_id] = event  # a repeat later in the same batch is a duplicate
        results.append(Appended(event, created=True))
    return results


def record(new: NewEvent, position: int, seq: int, now: datetime, prev_hash: str) -> RecordedEvent:
    unhashed = RecordedEvent(
        event_id=new.event_id, stream_id=new.stream_id, stream_seq=seq, position=position,
        type=new.type, schema_version=new.schema_version, payload=new.payload,
        metadata=new.metadata, recorded_at=now, payload_digest=payload_digest(new.payload),
        prev_hash=prev_hash, hash="",
    )
    return replace(unhashed, hash=chain_hash(prev_hash, unhashed))


def same_content(stored: RecordedEvent, new: NewEvent) -> bool:
    return (
        stored.stream_id == new.stream_id
        and stored.type == new.type
        and stored.schema_version == new.schema_version
        and stored.payload_digest == payload_digest(new.payload)
        and _comparable(stored.metadata) == _comparable(new.metadata)
    )


def _comparable(meta: EventMetadata) -> EventMetadata:
    return replace(meta, occurred_at=utc(meta.occurred_at) if meta.occurred_at else None)
