"""The tamper-evident hash chain. Pure functions over value objects.

Each event's hash covers the previous hash, its metadata and the *digest* of its
payload, never the payload bytes. That lets a payload be erased later (privacy) while
the chain still verifies: the stored digest stands in for the erased content.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from hashlib import sha256
from json.encoder import encode_basestring
from typing import Any, NamedTuple

from events.model import EventMetadata, RecordedEvent, iso_time, metadata_json
from kernel.canonical import canonical_json

GENESIS_HASH = "0" * 64


def payload_digest(payload: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()


def chained_fields(event: RecordedEvent) -> dict[str, Any]:
    """Everything the chain hash covers besides the previous hash."""
    return {
        "event_id": str(event.event_id),
        "stream_id": event.stream_id,
        "stream_seq": event.stream_seq,
        "position": event.position,
        "type": event.type,
        "schema_version": event.schema_version,
        **metadata_json(event.metadata, event.recorded_at),
        "payload_digest": event.payload_digest,
    }


def chain_hash(prev_hash: str, event: RecordedEvent) -> str:
    template = hash_template(event.event_id, event.stream_id, event.type, event.schema_version,
                             event.metadata, event.payload_digest)
    if template is None or type(event.position) is not int or type(event.stream_seq) is not int:
        return reference_chain_hash(prev_hash, event)
    return template.hash(prev_hash, event.position, recorded_json(event.recorded_at), event.stream_seq)


def reference_chain_hash(prev_hash: str, event: RecordedEvent) -> str:
    """The definition: sha256(prev_hash + canonical JSON of ``chained_fields``)."""
    material = prev_hash + canonical_json(chained_fields(event))
    return hashlib.sha256(material.encode()).hexdigest()


# --- the same hash, fast ------------------------------------------------------------
# ``canonical_json(chained_fields(e))`` sorts 16-17 keys and encodes them for every event
# written and verified. Its key order is fixed, so the text can be assembled from a
# template instead: everything but position, recorded_at and stream_seq is known before
# the writer takes the log lock, and those three are filled in under it. The output is
# byte-for-byte the canonical JSON (tests/unit/test_chain.py checks it on many events);
# a field of an unexpected type (an in-process caller's, not the API's) falls back to
# the definition.


class HashTemplate(NamedTuple):
    """The canonical JSON of an event's chained fields, cut where the numbering goes
    (a tuple: built for every event written, and a third of the cost of a frozen
    dataclass to make)."""

    head: str  # '{"actor":...,"payload_digest":"...","position":'
    middle: str  # ',"schema_version":...,"stream_seq":'
    tail: str  # ',"tenant":...,"type":...}'

    def hash(self, prev_hash: str, position: int, recorded_at_json: str, stream_seq: int) -> str:
        material = (f'{prev_hash}{self.head}{position:d},"recorded_at":{recorded_at_json}'
                    f'{self.middle}{stream_seq:d}{self.tail}')
        return sha256(material.encode()).hexdigest()


def recorded_json(recorded_at: datetime) -> str:
    """``recorded_at`` as the chain's JSON has it (one per batch: every event shares it)."""
    return encode_basestring(iso_time(recorded_at))


def hash_template(event_id: Any, stream_id: Any, event_type: Any, schema_version: Any,
                  meta: EventMetadata, digest: Any, occurred_at: str | None = None,
                  ) -> HashTemplate | None:
    """The template of an event's chain hash, or None when a field is not of the type
    the template encodes (then ``reference_chain_hash`` is the way). ``occurred_at``:
    ``iso_time(meta.occurred_at)`` when the caller has it already."""
    texts = _texts((meta.actor, meta.adapter_version, meta.causation_id, meta.claimed_actor,
                    meta.contract, meta.correlation_id, event_id, digest, meta.specialist,
                    stream_id, meta.tenant, event_type))
    if texts is None or type(schema_version) is not int or event_id is None:
        return None
    (actor, adapter, causation, claimed, contract, correlation, event_json, digest_json, specialist,
     stream, tenant, kind) = texts
    optional = "" if meta.claimed_actor is None else f',"claimed_actor":{claimed}'
    if meta.occurred_at is None:
        occurred = "null"
    else:
        occurred = encode_basestring(occurred_at or iso_time(meta.occurred_at))
    return HashTemplate(
        f'{{"actor":{actor},"adapter_version":{adapter},"causation_id":{causation}{optional},'
        f'"contract":{contract},"correlation_id":{correlation},"event_id":{event_json},'
        f'"occurred_at":{occurred},"payload_digest":{digest_json},"position":',
        f',"schema_version":{schema_version:d},"specialist":{specialist},'
        f'"stream_id":{stream},"stream_seq":',
        f',"tenant":{tenant},"type":{kind}}}',
    )


def _texts(values: tuple[Any, ...]) -> list[str] | None:
    """Each str field's JSON text ("null" for None), a UUID's as ``str()`` makes it; None
    when any is of another type. (One loop, not a call per field: this runs for every
    event written.)"""
    texts: list[str] = []
    append = texts.append
    for value in values:
        if value is None:
            append("null")
        elif (kind := type(value)) is str:
            append(encode_basestring(value))
        elif kind is uuid.UUID:
            append(f'"{value}"')
        else:
            return None
    return texts


@dataclass(frozen=True)
class ChainBreak:
    position: int
    reason: str


@dataclass(frozen=True)
class VerifyReport:
    checked: int
    last_position: int
    first_break: ChainBreak | None

    @property
    def intact(self) -> bool:
        return self.first_break is None


def verify_chain(events: Iterable[RecordedEvent], start_prev_hash: str = GENESIS_HASH,
                 start_position: int = 1) -> VerifyReport:
    """Walk events in position order; report the first position where the chain breaks.

    A changed payload shows as a digest mismatch, a changed field as a hash mismatch, a
    deleted row as a position gap (or a prev-hash mismatch at the end), a reordered row
    as a position out of order.
    """
    prev_hash, expected_position, checked = start_prev_hash, start_position, 0
    for event in events:
        problem = _first_problem(event, prev_hash, expected_position)
        if problem:
            return VerifyReport(checked, expected_position - 1, ChainBreak(event.position, problem))
        prev_hash, expected_position, checked = event.hash, event.position + 1, checked + 1
    return VerifyReport(checked, expected_position - 1, None)


def _first_problem(event: RecordedEvent, prev_hash: str, expected_position: int) -> str | None:
    if event.position != expected_position:
        return f"expected position {expected_position}, found {event.position} (row missing or moved)"
    if event.prev_hash != prev_hash:
        return "prev_hash does not match the previous event's hash"
    if payload_digest(event.payload) != event.payload_digest:
        return "payload does not match its digest (payload altered)"
    if chain_hash(prev_hash, event) != event.hash:
        return "hash does not match the event's fields (metadata altered)"
    return None
