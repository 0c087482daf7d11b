"""The input a rubric expression sees: a subject's events, digested, plus the harness.

Derived fields (`tool_calls`, `feedback`, `outcome`, `counts`, ...) are computed from
*all* of the subject's events; raw material is capped (contract/input_caps.py) and
`truncated` says whether any cap applied. Times are ISO-8601 strings (use
`timestamp(...)` in CEL); all numbers from payloads pass through.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import Any, Generic, TypeVar

from contract import vocabulary as v
from contract.input_caps import MAX_EVENTS, MAX_ITEMS, MAX_TEXT, MAX_TOOL_CALLS, MAX_TURNS, Caps
from contract.input_scan import Scan, Turn, text_of
from contract.input_shapes import (
    CountsInput,
    EventInput,
    FeedbackInput,
    OutcomeInput,
    SubjectInput,
    ToolCallInput,
    TurnInput,
)
from contract.sections import Harness
from contract.signals import Reaction, reaction, reaction_json, signals_json
from contract.subject import Subject
from events.model import RecordedEvent, utc


def build_input(subject: Subject, harness: Harness,
                only: Collection[str] | None = None) -> dict[str, Any]:
    """The variables every expression of a contract is evaluated against.

    ``only``: just these names (the others are left out). A contract's expressions read a
    few variables, and the ones they mostly do not read (``events``, ``turns``,
    ``harness``) cost the most to build. ``truncated`` depends on every cap, so asking for
    it builds everything.
    """
    if only is not None and "truncated" not in only:
        return _some(_Digest(subject, harness), _builders(only))
    digest = _Digest(subject, harness)
    values = _some(digest, _builders(_ALL_BUT_TRUNCATED))
    values["truncated"] = digest.truncated()
    return values


def _some(digest: _Digest, builders: Sequence[tuple[str, Callable[[_Digest], Any]]]) -> dict[str, Any]:
    return {name: build(digest) for name, build in builders}


def _builders(names: Collection[str]) -> list[tuple[str, Callable[[_Digest], Any]]]:
    """The builders of ``names``, in the vocabulary's order; remembered for a frozenset
    (each contract version asks for the same one every time)."""
    found = _CHOSEN.get(names) if type(names) is frozenset else None
    if found is None:
        # (``judge`` is not built from the events: contract/judged.py adds the verdicts.)
        found = [(n, _BUILDERS[n]) for n in v.INPUT_VARIABLES if n in names and n in _BUILDERS]
        if type(names) is frozenset and len(_CHOSEN) < 256:
            _CHOSEN[names] = found
    return found


_CHOSEN: dict[frozenset[str], list[tuple[str, Callable[[_Digest], Any]]]] = {}
_ALL_BUT_TRUNCATED = frozenset(v.INPUT_VARIABLES) - {"truncated", "judge"}


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
        # Every input the engine judges reads the turns and the counts (contract/evaluate.py
        # ENGINE_READS), so the pass over the events is made at once.
        self.scan = scan = Scan(subject.events)
        self.turns: list[Turn] = scan.turns
        # The specialist that served last: the latest routing decision, else event metadata.
        self.served_by: str | None = scan.routed or scan.last_specialist

    @_computed_once
    def tool_calls(self) -> list[ToolCallInput]:
        return _tool_calls(self.scan.called, self.scan.results, self.harness, self.served_by, self.caps)

    @_computed_once
    def reactions(self) -> list[Reaction]:
        """How the user answered each turn: by the next turn, the last one by the
        ``turn.user`` that closed the subject (if that is what closed it)."""
        if not self.turns:  # (an episode of no turn: a session started and ended)
            return []
        closer = self.subject.closer
        after_last = (text_of(closer.payload.get("text"))
                      if closer is not None and closer.type == v.TURN_USER else None)
        nexts = [t.user_text for t in self.turns[1:]] + [after_last]
        return [reaction(t.user_text, bool(t.assistant), n)
                for t, n in zip(self.turns, nexts, strict=True)]

    @_computed_once
    def outcome(self) -> OutcomeInput:
        return _outcome(self.scan.completed)

    def truncated(self) -> bool:
        """Whether any cap applied to the variables built so far (call it last)."""
        return (self.caps.truncated or len(self.events) > MAX_EVENTS
                or len(self.turns) > MAX_TURNS or len(self.tool_calls) > MAX_TOOL_CALLS)


_BUILDERS: dict[str, Callable[[_Digest], Any]] = {
    "subject": lambda d: _subject(d.subject),
    "events": lambda d: [_event(e, d.caps) for e in d.events[:MAX_EVENTS]],
    "turns": lambda d: [_turn_json(t, r, d.caps) for t, r in zip(d.turns[:MAX_TURNS], d.reactions,
                                                                 strict=False)],
    "user_text": lambda d: d.caps.text("\n\n".join(t.user_text for t in d.turns), MAX_TEXT),
    "assistant_text": lambda d: d.caps.text("\n\n".join("\n".join(t.assistant) for t in d.turns),
                                            MAX_TEXT),
    "tool_calls": lambda d: d.tool_calls[:MAX_TOOL_CALLS],
    "feedback": lambda d: _feedback(d.scan.feedback, d.caps),
    "outcome": lambda d: d.outcome["outcome"],
    "outcome_score": lambda d: d.outcome["outcome_score"],
    "specialist": lambda d: d.served_by,
    "specialists": lambda d: list(d.scan.specialists),
    "adapter_version": lambda d: d.scan.adapter_version,
    "harness": lambda d: d.harness.model_dump(mode="json"),
    "counts": lambda d: _counts(d.events, d.scan.by_type, d.turns,
                                _tool_tallies(d.scan.called, d.scan.results, d.harness, d.served_by)),
    "duration_s": lambda d: _duration(d.events),
    "signals": lambda d: signals_json(d.reactions, d.scan.feedback, d.scan.results, d.caps),
}


def _subject(subject: Subject) -> SubjectInput:
    return {
        "id": subject.id,
        "kind": subject.kind,
        "stream_id": subject.stream_id,
        "first_seq": subject.first_seq,
        "last_seq": subject.last_seq,
        "closed_by": subject.closed_by,
    }


def _event(event: RecordedEvent, caps: Caps) -> EventInput:
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


def _turn_json(turn: Turn, reacted: Reaction, caps: Caps) -> TurnInput:
    return {
        **reaction_json(reacted, caps),
        "user_seq": turn.user_seq,
        "user_text": caps.text(turn.user_text),
        "assistant_text": caps.text("\n".join(turn.assistant)),
        "answered": bool(turn.assistant),
        "specialist": turn.specialist,
        "adapter_version": turn.adapter_version,
        "model": turn.model,
        "tokens": turn.tokens,
    }


def _tool_calls(called: list[RecordedEvent], results: dict[str, dict[str, Any]], harness: Harness,
                served_by: str | None, caps: Caps) -> list[ToolCallInput]:
    calls: list[ToolCallInput] = []
    for event in called:
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


def _feedback(given: list[RecordedEvent], caps: Caps) -> FeedbackInput:
    ratings: list[float] = []
    comments: list[str] = []
    up = down = 0
    for event in given:
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


def _outcome(completed: RecordedEvent | None) -> OutcomeInput:
    payload = completed.payload if completed is not None else {}
    outcome, score = payload.get("outcome"), payload.get("score")
    return {
        "outcome": outcome if isinstance(outcome, str) else None,
        "outcome_score": _number(score),
    }


def _tool_tallies(called: list[RecordedEvent], results: dict[str, dict[str, Any]], harness: Harness,
                  served_by: str | None) -> tuple[int, int, int, int]:
    """The counts of `_tool_calls` (calls, failed, disallowed, unanswered), without copying
    each call's arguments and output through the caps: only `truncated` sees the caps, and
    asking for it builds `tool_calls` itself."""
    errors = disallowed = unanswered = 0
    for event in called:
        payload = event.payload
        result = results.get(_str(payload.get("call_id")))
        if result is None:
            unanswered += 1
        elif result.get("ok") is False:
            errors += 1
        if not harness.allows(_str(payload.get("tool")), event.metadata.specialist or served_by):
            disallowed += 1
    return len(called), errors, disallowed, unanswered


def _counts(events: tuple[RecordedEvent, ...], by_type: dict[str, int], turns: list[Turn],
            tools: tuple[int, int, int, int]) -> CountsInput:
    answered = 0
    for turn in turns:
        if turn.assistant:
            answered += 1
    return {
        "events": len(events),
        "turns": len(turns),
        "answered_turns": answered,
        "tool_calls": tools[0],
        "tool_errors": tools[1],
        "tools_disallowed": tools[2],
        "tools_unanswered": tools[3],
        "feedback": by_type.get(v.FEEDBACK_GIVEN, 0),
        "by_type": by_type,
    }


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


_str = text_of
