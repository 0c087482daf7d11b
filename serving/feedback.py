"""``POST /v1/feedback``: a rating or correction of an answer, and the end of an episode.

Recorded in the answer's session as ``feedback.given`` (``target_event_id``: the
answer's ``turn.assistant``, whose id is the completion's: ``chatcmpl-<hex>``), so the
evaluators judge it with the turn (a turn subject closes at the next ``turn.user``) or
the episode. ``end`` records ``episode.completed`` after it, which closes the episode
subject (the built-in harness's contracts judge episodes).

Feedback on an answer whose episode has **already ended** (the session went idle and the
server wrote ``session.expired``, or someone ended it) is refused, 409
``episode_ended``, naming the event that ended it: that episode was judged from the log as
it stood at its end (the same on every replay), so a late rating or ``end`` could change
no reward, and it is not stored where no subject would read it. The check and the write
cannot be overtaken: the batch is appended at the seq the check read (``expected_seq``),
so an expiry written in between makes it read and decide again.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from contract.vocabulary import EPISODE_ENDS, SESSION_EXPIRED
from events.catalogue import EpisodeCompleted, FeedbackGiven, typed
from events.errors import WrongExpectedSeq
from events.ingest import ClientEvent
from events.model import RecordedEvent
from kernel.errors import Conflict, NotFound
from serving.sessions import SessionNotFound, Sessions, SessionState, parse_session

TRIES = 3  # reads and writes of one feedback call, while the session keeps moving


class EndIn(BaseModel):
    outcome: Literal["success", "failure", "abandoned"]
    score: Annotated[float | None, Field(ge=0.0, le=1.0)] = None


class FeedbackIn(BaseModel):
    session: str = Field(description="The X-HCP-Session of the answer (or its stream, "
                         "session-<uuid>)")
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


class EpisodeEnded(Conflict):
    """The answer's episode has ended: feedback can no longer change how it was judged."""

    code = "episode_ended"
    field = "completion_id"


class FeedbackSessionNotFound(SessionNotFound):
    field = "session"  # the body's, not the X-HCP-Session header of a chat request


class SessionBusy(Conflict):
    code = "session_busy"
    field = "session"


def record_feedback(sessions: Sessions, record: Callable[[list[ClientEvent]], None],
                    body: FeedbackIn, tenant: str | None) -> list[ClientEvent]:
    """Read the session, build the feedback's events, append them where the read left the
    session; read again if it moved on meanwhile (a turn, an expiry)."""
    for _ in range(TRIES):
        state = sessions.read(session_id_of(body), tenant)
        if not state.events:
            raise FeedbackSessionNotFound(f"no session {body.session} in this key's tenant")
        events = feedback_events(state, body)
        try:
            record(events)
            return events
        except WrongExpectedSeq:
            continue
    raise SessionBusy(f"session {body.session} kept moving while the feedback was written; "
                      "send it again")


def session_id_of(body: FeedbackIn) -> uuid.UUID:
    try:
        return parse_session(body.session)
    except SessionNotFound as exc:
        raise FeedbackSessionNotFound(str(exc)) from None


def feedback_events(state: SessionState, body: FeedbackIn) -> list[ClientEvent]:
    target = _target(state, body.completion_id)
    _check_open(state, target)
    m = target.metadata
    items: list[tuple[str, dict[str, Any]]] = []
    given = {k: v for k, v in (("rating", body.rating), ("thumbs", body.thumbs),
                               ("comment", body.comment), ("correction", body.correction)) if v is not None}
    if given or body.end is None:
        items.append(typed(FeedbackGiven(**given, target_event_id=str(target.event_id))))
    if body.end is not None:
        items.append(typed(EpisodeCompleted(**body.end.model_dump(exclude_none=True))))
    at = state.events[-1].stream_seq
    return [ClientEvent(stream_id=state.stream_id, type=kind, payload=payload,
                        event_id=uuid.uuid4(), correlation_id=state.session_id,
                        specialist=m.specialist, adapter_version=m.adapter_version,
                        contract=m.contract, expected_seq=at if n == 0 else None)
            for n, (kind, payload) in enumerate(items)]


def _check_open(state: SessionState, target: RecordedEvent) -> None:
    end = next((e for e in state.events
                if e.stream_seq > target.stream_seq and e.type in EPISODE_ENDS), None)
    if end is None:
        return
    why = (f"the session was idle for {end.payload.get('idle_timeout_s')} s, its contract's "
           "harness.sessions.idle_timeout" if end.type == SESSION_EXPIRED
           else f"it was ended ({end.payload.get('outcome') or 'no outcome'})")
    raise EpisodeEnded(
        f"the episode of this answer ended at {end.recorded_at.isoformat()} with {end.type} "
        f"({why}); it was judged as the log stood then, so feedback on it is not recorded "
        "(a later answer of the session can be rated)")


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
