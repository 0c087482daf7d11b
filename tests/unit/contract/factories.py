"""Builders for contract tests: recorded events of one stream and small contract texts."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from contract.document import ContractDocument, parse_contract
from events.model import EventMetadata, RecordedEvent

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "contracts" / "default.toml"
T0 = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)

MINIMAL = """
[contract]
name = "mini"
description = "smallest useful contract"
schema_version = 1

[harness]
base_model = "hcp-tiny"
tool_allowlist = ["files.read", "web.search"]

[harness.router]
default_specialist = "chat"

[harness.specialists.chat]
[harness.specialists.coding]
tools = ["files.read"]

[evaluation]
subject = "{subject}"

[[evaluation.criteria]]
id = "helpfulness"
weight = 3.0
expression = "feedback.count > 0 ? (feedback.rating + 1.0) / 2.0 : 0.5"

[[evaluation.criteria]]
id = "discipline"
weight = 1.0
expression = "tool_calls.all(c, c.allowed) ? 1.0 : 0.0"

[training]
eligible = "score >= 0.5"
"""


def minimal(subject: str = "episode", **replace: str) -> str:
    text = MINIMAL.replace("{subject}", subject)
    for old, new in replace.items():
        text = text.replace(old, new)
    return text


def minimal_doc(subject: str = "episode") -> ContractDocument:
    return parse_contract(minimal(subject))


class Stream:
    """Appends recorded events to one stream with consecutive sequence numbers."""

    def __init__(self, stream_id: str | None = None, specialist: str | None = "coding") -> None:
        self.stream_id = stream_id or f"s-{uuid.uuid4().hex[:8]}"
        self.specialist = specialist
        self.events: list[RecordedEvent] = []

    def add(self, type_: str, specialist: str | None = None, **payload: Any) -> RecordedEvent:
        seq = len(self.events) + 1
        meta = EventMetadata(
            occurred_at=T0 + timedelta(seconds=seq),
            specialist=specialist or self.specialist,
            adapter_version=f"{specialist or self.specialist}@1",
        )
        event = RecordedEvent(
            event_id=uuid.uuid4(),
            stream_id=self.stream_id,
            stream_seq=seq,
            position=1000 + seq,
            type=type_,
            schema_version=1,
            payload=payload,
            metadata=meta,
            recorded_at=T0 + timedelta(seconds=seq, milliseconds=5),
            payload_digest="0" * 64,
            prev_hash="0" * 64,
            hash="0" * 64,
        )
        self.events.append(event)
        return event

    def turn(self, user: str, answer: str | None, **feedback: Any) -> None:
        self.add("turn.user", text=user)
        self.add("route.decided", specialist=self.specialist, adapter_version=f"{self.specialist}@1")
        if answer is not None:
            self.add("turn.assistant", text=answer, model="hcp-tiny", tokens=len(answer.split()))
        if feedback:
            self.add("feedback.given", **feedback)

    def tool(self, call_id: str, tool: str, ok: bool | None, **result: Any) -> None:
        self.add("tool.called", call_id=call_id, tool=tool, arguments={"q": call_id})
        if ok is not None:
            self.add("tool.result", call_id=call_id, ok=ok, **result)
