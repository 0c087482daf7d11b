"""Builders for evaluator tests: contract texts, conversations in a store, recorded streams."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from contract.versions import ContractVersion, ContractVersions
from events.model import EventMetadata, NewEvent, RecordedEvent
from events.store import EventStore

T0 = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)

CONTRACT = """
[contract]
name = "{name}"
description = "evaluator tests"
schema_version = 1

[harness]
base_model = "hcp-tiny"
tool_allowlist = ["web.search"]

[harness.router]
default_specialist = "chat"

[harness.specialists.chat]
[harness.specialists.coding]

[evaluation]
subject = "{subject}"

[[evaluation.criteria]]
id = "answered"
weight = {answered_weight}
expression = "counts.answered_turns > 0 ? 1.0 : 0.0"

[[evaluation.criteria]]
id = "feedback"
weight = 1.0
expression = "{feedback}"
{extra}
[training]
eligible = "{eligible}"
"""

FEEDBACK = "feedback.count > 0 ? (feedback.rating + 1.0) / 2.0 : 0.5"
# Reads a payload key that only some events carry: a run-time error, not a compile error.
MISSING_FIELD = "events[0].payload.rating_hint > 0 ? 1.0 : 0.0"


def contract_text(name: str = "default", subject: str = "turn", answered_weight: float = 1.0,
                  feedback: str = FEEDBACK, eligible: str = "score >= 0.5", extra: str = "") -> str:
    return CONTRACT.format(name=name, subject=subject, answered_weight=answered_weight,
                           feedback=feedback, eligible=eligible, extra=extra)


def publish(contracts: ContractVersions, text: str, name: str = "default",
            parent: int | None = None) -> ContractVersion:
    draft = contracts.create_draft(name, text, "test", parent_version=parent)
    return contracts.publish(name, draft.version, "test")


def conversation(store: EventStore, turns: int = 2, complete: bool = True,
                 thumbs: str | None = "up", specialist: str = "chat",
                 stream_id: str | None = None) -> str:
    """One stream: ``turns`` answered turns with feedback, then (optionally) episode.completed.

    Every turn but the last is closed by the next turn.user; the last by episode.completed.
    """
    stream = stream_id or f"s-{uuid.uuid4().hex[:10]}"
    meta = EventMetadata(specialist=specialist, adapter_version=f"{specialist}@1")
    batch: list[NewEvent] = []
    for i in range(turns):
        batch += [NewEvent(stream, "turn.user", {"text": f"question {i}"}, metadata=meta),
                  NewEvent(stream, "route.decided",
                           {"specialist": specialist, "adapter_version": f"{specialist}@1"}, metadata=meta),
                  NewEvent(stream, "turn.assistant", {"text": f"answer {i}"}, metadata=meta)]
        if thumbs:
            batch.append(NewEvent(stream, "feedback.given", {"thumbs": thumbs}, schema_version=2,
                                  metadata=meta))
    if complete:
        batch.append(NewEvent(stream, "episode.completed", {"outcome": "success"}, metadata=meta))
    store.append(batch)
    return stream


class Stream:
    """Recorded events of one stream, built in memory (no store)."""

    def __init__(self, stream_id: str | None = None, first_position: int = 1) -> None:
        self.stream_id = stream_id or f"s-{uuid.uuid4().hex[:8]}"
        self.position = first_position - 1
        self.events: list[RecordedEvent] = []

    def add(self, type_: str, **payload: Any) -> RecordedEvent:
        seq = len(self.events) + 1
        self.position += 1
        event = RecordedEvent(
            event_id=uuid.uuid4(), stream_id=self.stream_id, stream_seq=seq, position=self.position,
            type=type_, schema_version=1, payload=payload,
            metadata=EventMetadata(occurred_at=T0 + timedelta(seconds=seq), specialist="chat",
                                   adapter_version="chat@1"),
            recorded_at=T0 + timedelta(seconds=seq), payload_digest="0" * 64, prev_hash="0" * 64,
            hash="0" * 64)
        self.events.append(event)
        return event

    def turn(self, text: str = "q", answer: str | None = "a", thumbs: str | None = None) -> None:
        self.add("turn.user", text=text)
        if answer is not None:
            self.add("turn.assistant", text=answer)
        if thumbs:
            self.add("feedback.given", thumbs=thumbs)
