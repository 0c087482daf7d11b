"""The values of a rubric's input variables that are JSON objects (``contract.inputs``),
as CEL reads them by field (``turns[0].user_text``, ``counts.tool_errors``). Types only;
the field lists are the vocabulary's (docs/contract.md)."""

from __future__ import annotations

from typing import Any, TypedDict


class SubjectInput(TypedDict):
    id: str
    kind: str
    stream_id: str
    first_seq: int
    last_seq: int
    closed_by: str | None


class EventInput(TypedDict):
    event_id: str
    type: str
    seq: int
    payload: Any  # the event's payload, capped: whatever JSON the event carried
    specialist: str | None
    adapter_version: str | None
    contract: str | None
    actor: str | None
    occurred_at: str


class ReactionInput(TypedDict):
    """How the user answered a turn (``contract.signals``)."""

    next_user_text: str | None
    next_similarity: float | None
    regenerated: bool
    rephrased: bool
    contradicted: bool


class TurnInput(ReactionInput):
    user_seq: int
    user_text: str
    assistant_text: str
    answered: bool
    specialist: str | None
    adapter_version: str | None
    model: str | None
    tokens: int | None


class ToolCallInput(TypedDict):
    call_id: str
    tool: str
    arguments: Any  # as the call gave them, capped
    has_result: bool
    ok: bool | None
    output: Any  # as the tool returned it, capped
    error: str | None
    allowed: bool
    specialist: str | None


class FeedbackInput(TypedDict):
    count: int
    rating: float | None
    last_rating: float | None
    ratings: list[float]
    thumbs_up: int
    thumbs_down: int
    comments: list[str]


class OutcomeInput(TypedDict):
    outcome: str | None
    outcome_score: float | None


class CountsInput(TypedDict):
    events: int
    turns: int
    answered_turns: int
    tool_calls: int
    tool_errors: int
    tools_disallowed: int
    tools_unanswered: int
    feedback: int
    by_type: dict[str, int]


class SignalsInput(TypedDict):
    """What the user did next, over the subject's answered turns."""

    followed_up: int
    regenerated: int
    rephrased: int
    contradicted: int
    corrected: int
    corrections: list[str]
    tool_errors: int
    last: ReactionInput
