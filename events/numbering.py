"""Numbering a batch before it is stored: duplicates, optimistic concurrency, positions, hashes.

Pure: every store adapter reads the log head, the stream heads and the already-stored
events of the batch (under its writer lock) and hands them here; what comes back is
what to store, in order, each event chained to the one before.

The work splits in two so that little of it happens under the lock: ``prepare`` (the
payload's canonical JSON and digest, the chain hash's template) needs nothing from the
log and runs before the writer takes the lock; ``number_batch`` then only fills in
positions, seqs and hashes.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import NamedTuple

from events.chain import HashTemplate, hash_template, recorded_json, reference_chain_hash
from events.errors import EventIdConflict, StreamNotOpen, StreamOfAnotherTenant, WrongExpectedSeq
from events.model import EventMetadata, NewEvent, RecordedEvent, iso_time
from events.sql_rows import copy_head
from events.store import Appended
from kernel.canonical import canonical_json, sha256_hex
from kernel.clock import utc


class Prepared(NamedTuple):
    """A new event with what its numbering needs computed ahead of the lock (a tuple:
    one is made for every event written)."""

    new: NewEvent
    payload_json: str  # canonical JSON: digested, and what the SQL store writes
    digest: str
    template: HashTemplate | None  # None: hash it by the definition (unusual field types)
    id_text: str  # str(event_id): the key of the batch's duplicates check
    # The SQL row's fields known before numbering, as COPY text (events/sql_rows.py);
    # None with the template (unusual field types: the row goes through the driver).
    row_head: str | None


def prepare(new: NewEvent) -> Prepared:
    text = new.payload_json if new.payload_json is not None else canonical_json(new.payload)
    digest = sha256_hex(text)
    meta, id_text = new.metadata, str(new.event_id)
    occurred = None if meta.occurred_at is None else iso_time(meta.occurred_at)
    template = hash_template(None if new.event_id is None else id_text, new.stream_id, new.type,
                             new.schema_version, meta, digest, occurred)
    row_head = None if template is None else copy_head(new, id_text, text, digest, occurred)
    return Prepared(new, text, digest, template, id_text, row_head)


def prepare_batch(batch: Sequence[NewEvent]) -> list[Prepared]:
    return [prepare(new) for new in batch]


def number_batch(batch: Sequence[NewEvent], existing: dict[uuid.UUID, RecordedEvent],
                 head_position: int, head_hash: str, stream_seqs: dict[str, int],
                 now: datetime, stream_tenants: dict[str, str | None] | None = None,
                 prepared: Sequence[Prepared] | None = None) -> list[Appended]:
    """One ``Appended`` per input: stored duplicates as they are, new events numbered.

    ``stream_tenants`` holds the tenant of each existing stream's last event: a stream
    belongs to one tenant, so an event naming another is refused (a stream first written
    by a batch belongs to the tenant of its first event). ``prepared``: ``batch`` already
    through ``prepare`` (in the same order), so that work stays outside the lock.

    Raises:
        EventIdConflict: an event_id is stored (or repeated in the batch) with other content.
        WrongExpectedSeq: an ``expected_seq`` does not match its stream's head.
        StreamOfAnotherTenant: the stream belongs to another tenant.
    """
    numbering = Numbering(existing, head_position, head_hash, stream_seqs, now, stream_tenants)
    return numbering.number(prepared if prepared is not None else prepare_batch(batch))


class Numbering:
    """The log's state under the writer lock, numbering one batch after another.

    Several client batches can share a transaction (the API's group commit): each is
    numbered after the ones before it, all or nothing, and one that fails (a conflict,
    a wrong expected seq) leaves the state as it was for the next.
    """

    def __init__(self, existing: dict[uuid.UUID, RecordedEvent], head_position: int,
                 head_hash: str, stream_seqs: dict[str, int], now: datetime,
                 stream_tenants: dict[str, str | None] | None = None) -> None:
        # Keyed by the id's text: a str caches its hash, a UUID computes it every time.
        self.known = {str(event_id): event for event_id, event in existing.items()}
        self.seqs = dict(stream_seqs)
        self.owners, self.check_owners = dict(stream_tenants or {}), stream_tenants is not None
        self.position, self.prev_hash, self.now = head_position, head_hash, now
        self.recorded = recorded_json(now)

    def number(self, items: Sequence[Prepared]) -> list[Appended]:
        """Number ``items`` on from the state; see ``number_batch`` for what it raises."""
        known: dict[str, RecordedEvent] = {}  # this batch's changes, kept on success
        seqs: dict[str, int] = {}
        owners: dict[str, str | None] = {}
        position, prev_hash = self.position, self.prev_hash
        results: list[Appended] = []
        for index, item in enumerate(items):
            new, key = item.new, item.id_text
            stored = known.get(key) or self.known.get(key)
            if stored is not None:
                if not same_content(stored, new, item.digest):
                    raise EventIdConflict(new.event_id, index)
                results.append(Appended(stored, created=False))
                continue
            stream = new.stream_id
            current = seqs[stream] if stream in seqs else self.seqs.get(stream, 0)
            owner = owners[stream] if stream in owners else self.owners.get(stream)
            foreign = bool(current) and self.check_owners and owner != new.metadata.tenant
            _check_open(new, index, current, foreign)
            owners[stream] = new.metadata.tenant
            if new.expected_seq is not None and new.expected_seq != current:
                raise WrongExpectedSeq(stream, new.expected_seq, current, index)
            position += 1
            seqs[stream] = current + 1
            event = _record(item, position, current + 1, self.now, self.recorded, prev_hash)
            prev_hash = event.hash
            known[key] = event  # a repeat later in the same batch is a duplicate
            results.append(Appended(event, created=True))
        self.known.update(known)
        self.seqs.update(seqs)
        self.owners.update(owners)
        self.position, self.prev_hash = position, prev_hash
        return results


def _check_open(new: NewEvent, index: int, current: int, foreign: bool) -> None:
    """Another tenant's stream is answered as a missing one would be, so no answer tells
    whether it exists: a wrong ``expected_seq`` is checked against seq 0 (what the writer
    can see of it), and a derived stream the writer may not create is "not found" either
    way. Only a write that would create a missing stream tells them apart (it succeeds)."""
    if not new.may_create and (not current or foreign):
        raise StreamNotOpen(new.stream_id, index)
    if foreign:
        if new.expected_seq is not None and new.expected_seq != 0:
            raise WrongExpectedSeq(new.stream_id, new.expected_seq, 0, index)
        raise StreamOfAnotherTenant(new.stream_id, index)


def record(new: NewEvent, position: int, seq: int, now: datetime, prev_hash: str) -> RecordedEvent:
    """One event numbered and chained (``number_batch`` does this for a whole batch)."""
    return _record(prepare(new), position, seq, now, recorded_json(now), prev_hash)


def _record(item: Prepared, position: int, seq: int, now: datetime, recorded: str,
            prev_hash: str) -> RecordedEvent:
    new, template = item.new, item.template
    event = RecordedEvent(
        event_id=new.event_id, stream_id=new.stream_id, stream_seq=seq, position=position,
        type=new.type, schema_version=new.schema_version, payload=new.payload,
        metadata=new.metadata, recorded_at=now, payload_digest=item.digest, prev_hash=prev_hash,
        hash=template.hash(prev_hash, position, recorded, seq) if template is not None else "",
    )  # built once: the template hashes the fields without the event object
    return event if template is not None else replace(event, hash=reference_chain_hash(prev_hash, event))


def same_content(stored: RecordedEvent, new: NewEvent, digest: str | None = None) -> bool:
    return (
        stored.stream_id == new.stream_id
        and stored.type == new.type
        and stored.schema_version == new.schema_version
        and stored.payload_digest == (digest or sha256_hex(canonical_json(new.payload)))
        and _comparable(stored.metadata) == _comparable(new.metadata)
    )


def _comparable(meta: EventMetadata) -> EventMetadata:
    return replace(meta, occurred_at=utc(meta.occurred_at) if meta.occurred_at else None)
