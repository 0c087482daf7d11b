"""The input a rubric expression sees: a subject's events, digested, plus the harness.

Derived fields (`tool_calls`, `feedback`, `outcome`, `counts`, ...) are computed from
*all* of the subject's events; raw material is capped (contract/input_caps.py) and
`truncated` says whether any cap applied. Times are ISO-8601 strings (use
`timestamp(...)` in CEL); all numbers from payloads pass through.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from contract import vocabulary as v
from contract.input_caps import MAX_EVENTS, MAX_ITEMS, MAX_TEXT, MAX_TOOL_CALLS, MAX_TURNS, Caps
from contract.sections import Harness
from contract.subject import Subject
from events.model import RecordedEvent, utc


@dataclass
class _Turn:
    user_seq: int
    user_text: str
    assistant: list[str] = field(default_factory=list)
    specialist: str | None = None
    adapter_version: str | None = None
    model: str | None = None
    tokens: int | None = None


def build_input(subject: Subject, harness: Harness,
                only: Collection[str] | None = None) -> dict[str, Any]:
    """The variables every expression of a contract is evaluated against.

    ``only``: just these names (the others are left out). A contract's expressions read a
    few variables, and the ones they mostly do not read (``events``, ``turns``,
    ``harness``) cost the most to build. ``truncated`` depends on every cap, so asking for
    it builds everything.
    """
    if only is not None and "truncated" not in only:
        return _some(_Digest(subject, harness), [n for n in v.INPUT_VARIABLES if n in only])
    digest = _Digest(subject, harness)
    values = _some(digest, [n for n in v.INPUT_VARIABLES if n != "truncated"])
    values["truncated"] = digest.truncated()
    return values


def _some(digest: _Digest, names: Sequence[str]) -> dict[str, Any]:
    return {name: _BUILDERS[name](digest) for name in names}


T = TypeVar("T")


class _computed_once(Generic[T]):  # noqa: N801 (used as a decorator, like cached_property)
    """``functools.cached_property`` without its lock: on 3.11 every first read of every
    instance takes one lock shared by all instances (a few per cent of building a
    subject's input, three reads per subject). A digest belongs to one call, so there is
    nothing to guard."""

    def __init__(self, compute: Callable[[Any], T]) -> None:
        self.compute, self.name = compute, compute.__name__

    def __get__(self, digest: Any, owner: type | None = None) -> T:
        value = digest.__dict__[self.name] = self.compute(digest)  # later reads: the instance's
        return value


class _Digest:
    """One subject's events, with the parts several variables share computed once."""

    def __init__(self, subject: Subject, harness: Harness) -> None:
        self.subject, self.harness, self.events, self.caps = subject, harness, subject.events, Caps()

    @_computed_once
    def turns(self) -> list[_Turn]:
        return _turns(self.events)

    @_computed_once
    def served_by(self) -> str | None:
        return _served_by(self.events)

    @_computed_once
    def tool_calls(self) -> list[dict[str, Any]]:
        return _tool_calls(self.events, self.harness, self.served_by, self.caps)

    @_computed_once
    def outcome(self) -> dict[str, Any]:
        return _outcome(self.events)

    def truncated(self) -> bool:
        """Whether any cap applied to the variables built so far (call it last)."""
        return (self.caps.truncated or len(self.events) > MAX_EVENTS
                or len(self.turns) > MAX_TURNS or len(self.tool_calls) > MAX_TOOL_CALLS)


_BUILDERS: dict[str, Callable[[_Digest], Any]] = {
    "subject": lambda d: _subject(d.subject),
    "events": lambda d: [_event(e, d.caps) for e in d.events[:MAX_EVENTS]],
    "turns": lambda d: [_turn_json(t, d.caps) for t in d.turns[:MAX_TURNS]],
    "user_text": lambda d: d.caps.text("\n\n".join(t.user_text for t in d.turns), MAX_TEXT),
    "assistant_text": lambda d: d.caps.text("\n\n".join("\n".join(t.assistant) for t in d.turns),
                                            MAX_TEXT),
    "tool_calls": lambda d: d.tool_calls[:MAX_TOOL_CALLS],
    "feedback": lambda d: _feedback(d.events, d.caps),
    "outcome": lambda d: d.outcome["outcome"],
    "outcome_score": lambda d: d.outcome["outcome_score"],
    "specialist": lambda d: d.served_by,
    "specialists": lambda d: _distinct(_specialist(e) for e in d.events),
    "adapter_version": lambda d: _last(_adapter_version(e) for e in d.events),
    "harness": lambda d: d.harness.model_dump(mode="json"),
    "counts": lambda d: _counts(d.events, d.turns, d.tool_calls),
    "duration_s": lambda d: _duration(d.events),
}


def _subject(subject: Subject) -> dict[str, Any]:
    return {
        "id": subject.id,
        "kind": subject.kind,
        "stream_id": subject.stream_id,
        "first_seq": subject.first_seq,
        "last_seq": subject.last_seq,
    }


def _event(event: RecordedEvent, caps: Caps) -> dict[str, Any]:
    meta = event.metadata
    return {
        "event_id": str(event.event_id),
        "type": event.type,
        "seq": event.stream_seq,
        "payload": caps.json(event.payload),
        "specialist": meta.specialist,
        "adapter_version": meta.adapter_version,
        "contract": meta.contract,
        "actor": meta.actor,
        "occurred_at": _iso(_when(event)),
    }


def _turns(events: tuple[RecordedEvent, ...]) -> list[_Turn]:
    turns: list[_Turn] = []
    for event in events:
        payload = event.payload
        if event.type == v.TURN_USER:
            turns.append(_Turn(event.stream_seq, _str(payload.get("text"))))
        elif not turns:
            continue
        elif event.type == v.ROUTE_DECIDED:
            turns[-1].specialist = _str(payload.get("specialist")) or turns[-1].specialist
            turns[-1].adapter_version = _str(payload.get("adapter_version")) or None
        elif event.type == v.TURN_ASSISTANT:
            turn = turns[-1]
            turn.assistant.append(_str(payload.get("text")))
            turn.specialist = turn.specialist or event.metadata.specialist
            turn.adapter_version = turn.adapter_version or event.metadata.adapter_version
            turn.model = _str(payload.get("model")) or turn.model
            tokens = payload.get("tokens")
            if isinstance(tokens, int) and not isinstance(tokens, bool):
                turn.tokens = (turn.tokens or 0) + tokens
    return turns


def _turn_json(turn: _Turn, caps: Caps) -> dict[str, Any]:
    return {
        "user_seq": turn.user_seq,
        "user_text": caps.text(turn.user_text),
        "assistant_text": caps.text("\n".join(turn.assistant)),
        "answered": bool(turn.assistant),
        "specialist": turn.specialist,
        "adapter_version": turn.adapter_version,
        "model": turn.model,
        "tokens": turn.tokens,
    }


def _tool_calls(
    events: tuple[RecordedEvent, ...], harness: Harness, served_by: str | None, caps: Caps
) -> list[dict[str, Any]]:
    results = {_str(e.payload.get("call_id")): e.payload for e in events if e.type == v.TOOL_RESULT}
    calls = []
    for event in (e for e in events if e.type == v.TOOL_CALLED):
        call_id, tool = _str(event.payload.get("call_id")), _str(event.payload.get("tool"))
        result = results.get(call_id)
        specialist = event.metadata.specialist or served_by
        ok = result.get("ok") if result is not None else None
        calls.append(
            {
                "call_id": call_id,
                "tool": tool,
                "arguments": caps.json(event.payload.get("arguments", {})),
                "has_result": result is not None,
                "ok": ok if isinstance(ok, bool) else None,
                "output": caps.json(result.get("output")) if result is not None else None,
                "error": caps.text(result.get("error")) or None if result is not None else None,
                "allowed": harness.allows(tool, specialist),
                "specialist": specialist,
            }
        )
    return calls


def _feedback(events: tuple[RecordedEvent, ...], caps: Caps) -> dict[str, Any]:
    ratings: list[float] = []
    comments: list[str] = []
    up = down = 0
    for event in (e for e in events if e.type == v.FEEDBACK_GIVEN):
        rating, thumbs = event.payload.get("rating"), event.payload.get("thumbs")
        up, down = up + (thumbs == "up"), down + (thumbs == "down")
        number = _number(rating)
        if number is not None:
            ratings.append(max(-1.0, min(1.0, number)))
        elif thumbs in ("up", "down"):
            ratings.append(1.0 if thumbs == "up" else -1.0)
        if isinstance(event.payload.get("comment"), str):
            comments.append(caps.text(event.payload["comment"]))
    return {
        "count": len(ratings),
        "rating": sum(ratings) / len(ratings) if ratings else None,
        "last_rating": ratings[-1] if ratings else None,
        "ratings": ratings[:MAX_ITEMS],
        "thumbs_up": up,
        "thumbs_down": down,
        "comments": comments[:MAX_ITEMS],
    }


def _outcome(events: tuple[RecordedEvent, ...]) -> dict[str, Any]:
    completed = [e for e in events if e.type == v.EPISODE_COMPLETED]
    payload = completed[-1].payload if completed else {}
    outcome, score = payload.get("outcome"), payload.get("score")
    return {
        "outcome": outcome if isinstance(outcome, str) else None,
        "outcome_score": _number(score),
    }


def _counts(
    events: tuple[RecordedEvent, ...], turns: list[_Turn], tool_calls: list[dict[str, Any]]
) -> dict[str, Any]:
    by_type: dict[str, int] = {}
    for event in events:
        by_type[event.type] = by_type.get(event.type, 0) + 1
    return {
        "events": len(events),
        "turns": len(turns),
        "answered_turns": sum(1 for t in turns if t.assistant),
        "tool_calls": len(tool_calls),
        "tool_errors": sum(1 for c in tool_calls if c["ok"] is False),
        "tools_disallowed": sum(1 for c in tool_calls if not c["allowed"]),
        "tools_unanswered": sum(1 for c in tool_calls if not c["has_result"]),
        "feedback": by_type.get(v.FEEDBACK_GIVEN, 0),
        "by_type": by_type,
    }


def _served_by(events: tuple[RecordedEvent, ...]) -> str | None:
    """The specialist that served last: the latest routing decision, else event metadata."""
    routed = _last(_str(e.payload.get("specialist")) or None for e in events if e.type == v.ROUTE_DECIDED)
    return routed or _last(_specialist(e) for e in events)


def _specialist(event: RecordedEvent) -> str | None:
    if event.type == v.ROUTE_DECIDED:
        return _str(event.payload.get("specialist")) or event.metadata.specialist
    return event.metadata.specialist


def _adapter_version(event: RecordedEvent) -> str | None:
    if event.type == v.ROUTE_DECIDED:
        return _str(event.payload.get("adapter_version")) or event.metadata.adapter_version
    return event.metadata.adapter_version


def _duration(events: tuple[RecordedEvent, ...]) -> float | None:
    if not events:
        return None
    return (utc(_when(events[-1])) - utc(_when(events[0]))).total_seconds()


def _when(event: RecordedEvent) -> datetime:
    return event.metadata.occurred_at or event.recorded_at


def _iso(moment: datetime) -> str:
    return utc(moment).isoformat().replace("+00:00", "Z")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _last(values: Any) -> Any:
    found = None
    for value in values:
        found = value if value is not None else found
    return found


def _distinct(values: Any) -> list[str]:
    seen: list[str] = []
    for value in values:
        if value is not None and value not in seen:
            seen.append(value)
    return seen
