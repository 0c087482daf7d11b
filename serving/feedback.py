"""``POST /v1/feedback``: a rating or correction of an answer, and the end of an episode.

Recorded in the answer's session as ``feedback.given`` (``target_event_id``: the
answer's ``turn.assistant``, whose id is the completion's: ``chatcmpl-<hex>``), so the
evaluators judge it with the turn (a turn subject closes at the next ``turn.user``) or
the episode. ``end`` records ``episode.completed`` after it, which closes the episode
subject (the built-in harness's contracts judge episodes).
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from events.ingest import ClientEvent
from events.model import RecordedEvent
from kernel.errors import NotFound
from serving.sessions import SessionState, parse_session


class EndIn(BaseModel):
    outcome: Literal["success", "failure", "abandoned"]
    score: Annotated[float | None, Field(ge=0.0, le=1.0)] = None


class FeedbackIn(BaseModel):
    session: str = Field(description="The X-HCP-Session of the answer")
    completion_id: str | None = Field(None, description="The answer's id (chatcmpl-…); "
                                      "null: the session's latest answer")
    rating: Annotated[float | None, Field(ge=-1.0, le=1.0)] = None
    thumbs: Literal["up", "down"] | None = None
    comment: Annotated[str | None, Field(max_length=8192)] = None
    correction: Annotated[str | None, Field(max_length=65536,
                                            description="What the answer should have been")] = None
    end: EndIn | None = Field(None, description="End the episode with this outcome")


class TargetNotFound(NotFound):
    field = "completion_id"


def session_id_of(body: FeedbackIn) -> uuid.UUID:
    return parse_session(body.session)


def feedback_events(state: SessionState, body: FeedbackIn) -> list[ClientEvent]:
    target = _target(state, body.completion_id)
    m = target.metadata
    items: list[tuple[str, dict[str, Any]]] = []
    given = {k: v for k, v in (("rating", body.rating), ("thumbs", body.thumbs),
                               ("comment", body.comment), ("correction", body.correction)) if v is not None}
    if given or body.end is None:
        items.append(("feedback.given", {**given, "target_event_id": str(target.event_id)}))
    if body.end is not None:
        items.append(("episode.completed", body.end.model_dump(exclude_none=True)))
    return [ClientEvent(stream_id=state.stream_id, type=kind, payload=payload,
                        event_id=uuid.uuid4(), correlation_id=state.session_id,
                        specialist=m.specialist, adapter_version=m.adapter_version,
                        contract=m.contract)
            for kind, payload in items]


def _target(state: SessionState, completion_id: str | None) -> RecordedEvent:
    answers = [e for e in state.events if e.type == "turn.assistant"]
    if completion_id is None:
        if not answers:
            raise TargetNotFound("the session has no answer yet")
        return answers[-1]
    try:
        wanted = uuid.UUID(completion_id.removeprefix("chatcmpl-"))
    except ValueError:
        raise TargetNotFound(f"'{completion_id[:80]}' is not a completion id") from None
    found = next((e for e in answers if e.event_id == wanted), None)
    if found is None:
        raise TargetNotFound(f"no answer {completion_id} in session {state.session_id}")
    return found
