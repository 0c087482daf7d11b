"""One pass over a subject's events gathering what several input variables share
(contract/inputs.py builds the variables from it): turns, counts by type, feedback, tool
calls and results, the specialists and adapter versions named, the last outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contract import vocabulary as v
from events.model import RecordedEvent


@dataclass
class Turn:
    user_seq: int
    user_text: str
    assistant: list[str] = field(default_factory=list)
    specialist: str | None = None
    adapter_version: str | None = None
    model: str | None = None
    tokens: int | None = None


class Scan:
    """What several variables read from a subject's events, gathered in one pass (each
    variable walking them again cost more than building it). Nothing here is capped: the
    caps apply where a variable is built, so `truncated` still says what was built.

    An event's specialist (adapter version) is the one a routing decision names, else
    its metadata's; `specialists` are the distinct ones in order, the last ones are kept.
    """

    def __init__(self, events: tuple[RecordedEvent, ...]) -> None:
        by_type: dict[str, int] = {}
        turns: list[Turn] = []
        feedback: list[RecordedEvent] = []
        called: list[RecordedEvent] = []
        results: dict[str, dict[str, Any]] = {}  # call id -> the last result's payload
        specialists: list[str] = []
        completed = routed = last_specialist = last_adapter = None
        for event in events:
            kind, payload, meta = event.type, event.payload, event.metadata
            by_type[kind] = by_type.get(kind, 0) + 1
            if kind == _ROUTE_DECIDED:
                named = text_of(payload.get("specialist"))
                routed = named or routed
                specialist = named or meta.specialist
                adapter = text_of(payload.get("adapter_version")) or meta.adapter_version
                if turns:
                    turns[-1].specialist = named or turns[-1].specialist
                    turns[-1].adapter_version = text_of(payload.get("adapter_version")) or None
            else:
                specialist, adapter = meta.specialist, meta.adapter_version
                if kind == _TURN_USER:
                    turns.append(Turn(event.stream_seq, text_of(payload.get("text"))))
                elif kind == _TURN_ASSISTANT:
                    if turns:
                        _answer(turns[-1], event)
                elif kind == _FEEDBACK_GIVEN:
                    feedback.append(event)
                elif kind == _TOOL_CALLED:
                    called.append(event)
                elif kind == _TOOL_RESULT:
                    results[text_of(payload.get("call_id"))] = payload
                elif kind == _EPISODE_COMPLETED:
                    completed = event
            if specialist is not None:
                last_specialist = specialist
                if specialist not in specialists:
                    specialists.append(specialist)
            if adapter is not None:
                last_adapter = adapter
        self.by_type: dict[str, int] = by_type
        self.turns: list[Turn] = turns
        self.feedback: list[RecordedEvent] = feedback
        self.called: list[RecordedEvent] = called
        self.results: dict[str, dict[str, Any]] = results
        self.specialists: list[str] = specialists
        self.completed: RecordedEvent | None = completed  # the last episode.completed
        self.routed: str | None = routed  # the last routing decision's specialist, if named
        self.last_specialist: str | None = last_specialist  # of the last event that has one
        self.adapter_version: str | None = last_adapter  # of the last event that has one


_ROUTE_DECIDED, _TURN_USER, _TURN_ASSISTANT = v.ROUTE_DECIDED, v.TURN_USER, v.TURN_ASSISTANT
_FEEDBACK_GIVEN, _TOOL_CALLED, _TOOL_RESULT = v.FEEDBACK_GIVEN, v.TOOL_CALLED, v.TOOL_RESULT
_EPISODE_COMPLETED = v.EPISODE_COMPLETED


def _answer(turn: Turn, event: RecordedEvent) -> None:
    payload = event.payload
    turn.assistant.append(text_of(payload.get("text")))
    turn.specialist = turn.specialist or event.metadata.specialist
    turn.adapter_version = turn.adapter_version or event.metadata.adapter_version
    turn.model = text_of(payload.get("model")) or turn.model
    tokens = payload.get("tokens")
    if isinstance(tokens, int) and not isinstance(tokens, bool):
        turn.tokens = (turn.tokens or 0) + tokens


def text_of(value: Any) -> str:
    """A payload field as text: "" unless it is a string."""
    return value if isinstance(value, str) else ""
