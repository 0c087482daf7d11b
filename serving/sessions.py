"""Sessions: which stream an exchange is recorded on, and what that stream says so far.

A session is the stream ``session-<uuid>``, as the built-in harness writes them. Which
one a request is recorded in, first rule that applies:

1. ``X-HCP-Session``: the session an answer named;
2. ``user``: that user's running session (its id is derived from the tenant and the
   user, so it is the same in every gateway process);
3. the history: a request whose messages through its last assistant message are a
   recorded exchange (its messages and the answer given), as a client that keeps no
   session resends them, continues that exchange's session (``serving.continuity``);
4. otherwise a new session.

A session named by the header must already hold events of the caller's tenant, so no key
can write into another tenant's conversation (the read is tenant-filtered: another
tenant's session looks like no session at all); the history is looked up in the key's
tenant only.

A session holds episodes: one ends with ``episode.completed`` (``POST /v1/feedback``
with ``end``) or, once idle for the serving contract's ``harness.sessions.idle_timeout``,
with the server's ``session.expired``; the next request in it starts the next episode
with ``session.started`` (a late turn of an expired session is the start of a new one).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace

from contract.vocabulary import EPISODE_ENDS
from events.derived import derived_id
from events.model import RecordedEvent
from events.store import EventStore
from kernel.errors import NotFound
from serving.continuity import earlier_history, head_stream, history_digest
from serving.openai_shapes import Message
from serving.traces import LINKED, SESSION, marker_id

SESSION_HEADER = "X-HCP-Session"
# Derived session ids: ``events.derived.derived_id`` under this namespace of
# "<tenant>\0<user>" (only the server may open such a session, so no tenant can take
# another's user's session first).
USER_SESSIONS = uuid.UUID("1f0c6b9e-3c1a-5d0e-9a57-6b8d2f4e7c11")
MAX_SESSION_EVENTS = 100_000


class SessionNotFound(NotFound):
    code = "session_not_found"
    field = SESSION_HEADER


@dataclass(frozen=True)
class SessionState:
    session_id: uuid.UUID
    events: tuple[RecordedEvent, ...]  # this tenant's, in stream order
    found_by: str = "new"  # header | user | history | new (the rule that chose it)

    @property
    def stream_id(self) -> str:
        return stream_of(self.session_id)

    @property
    def episode_open(self) -> bool:
        """Whether a turn now continues an episode (else it starts one)."""
        return bool(self.events) and self.events[-1].type not in EPISODE_ENDS

    @property
    def last_specialist(self) -> str | None:
        for event in reversed(self.events):
            if event.type == "route.decided":
                return str(event.payload.get("specialist"))
        return None

    def event(self, event_id: uuid.UUID) -> RecordedEvent | None:
        return next((e for e in self.events if e.event_id == event_id), None)


def stream_of(session_id: uuid.UUID) -> str:
    return f"session-{session_id}"


def parse_session(text: str) -> uuid.UUID:
    """A session id as the header carries it (a UUID) or as the log names its stream
    (``session-<uuid>``, what `hcp sessions list` and the console show)."""
    try:
        return uuid.UUID(text.strip().removeprefix("session-"))
    except ValueError:
        raise SessionNotFound(f"'{text[:80]}' is not a session id (a UUID, or "
                              "session-<uuid>)") from None


class Sessions:
    def __init__(self, store: EventStore) -> None:
        self.store = store

    def read(self, session_id: uuid.UUID, tenant: str | None) -> SessionState:
        events: list[RecordedEvent] = []
        after = 0
        while len(events) < MAX_SESSION_EVENTS:
            page = self.store.read_stream(stream_of(session_id), after, 1000, tenant)
            events += page
            if len(page) < 1000:
                break
            after = page[-1].stream_seq
        return SessionState(session_id, tuple(events))

    def for_request(self, header: str | None, user: str | None, tenant: str | None,
                    messages: Sequence[Message] = ()) -> SessionState:
        """The session a request is recorded in (see the module's docstring)."""
        if header:
            state = self.read(parse_session(header), tenant)
            if not state.events:
                raise SessionNotFound(f"no session {header} in this key's tenant: send the "
                                      f"{SESSION_HEADER} an answer carried, or none to start one")
            return replace(state, found_by="header")
        if user:
            state = self.read(derived_id(USER_SESSIONS, f"{tenant or ''}\0{user}"), tenant)
            return replace(state, found_by="user")
        continued = self.continued(messages, tenant)
        return continued or SessionState(uuid.uuid4(), ())

    def trace_marked(self, tenant: str | None, trace_id: str) -> bool:
        """Whether the trace has its marker already: joined to a gateway session, or mapped
        to a session of its own by OTLP ingest (``serving.traces``)."""
        return any(self.store.get(marker_id(tenant, trace_id, kind), tenant) is not None
                   for kind in (LINKED, SESSION))

    def continued(self, messages: Sequence[Message], tenant: str | None) -> SessionState | None:
        """The session of the recorded exchange these messages extend, if any: the one the
        first head of that history names (every process reads the same first one)."""
        earlier = earlier_history(messages)
        if earlier is None:
            return None
        heads = self.store.read_stream(head_stream(tenant, history_digest(earlier)), 0, 1, tenant)
        if not heads:
            return None
        state = self.read(uuid.UUID(str(heads[0].payload["session_id"])), tenant)
        return replace(state, found_by="history") if state.events else None
