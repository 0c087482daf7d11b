"""The tamper-evident hash chain. Pure functions over value objects.

Each event's hash covers the previous hash, its metadata and the *digest* of its
payload, never the payload bytes. That lets a payload be erased later (privacy) while
the chain still verifies: the stored digest stands in for the erased content.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from events.model import RecordedEvent, metadata_json
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
    material = prev_hash + canonical_json(chained_fields(event))
    return hashlib.sha256(material.encode()).hexdigest()


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
