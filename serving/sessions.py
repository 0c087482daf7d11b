"""Sessions: which stream an exchange is recorded on, and what that stream says so far.

A session is the stream ``session-<uuid>``, as the built-in harness writes them. A
client continues one by sending back the ``X-HCP-Session`` header of an answer; a
request with a ``user`` and no header continues that user's running session (its id is
derived from the tenant and the user, so it is the same in every gateway process); any
other request starts a new session. A session named by the header must already hold
events of the caller's tenant, so no key can write into another tenant's conversation
(the read is tenant-filtered: another tenant's session looks like no session at all).

A session holds episodes: one ends with ``episode.completed`` (``POST /v1/feedback``
with ``end``); the next request in it starts the next episode with ``session.started``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from events.model import RecordedEvent
from events.store import EventStore
from kernel.errors import NotFound

SESSION_HEADER = "X-HCP-Session"
# Derived session ids: uuid5 under this namespace of "<tenant>\0<user>".
USER_SESSIONS = uuid.UUID("1f0c6b9e-3c1a-5d0e-9a57-6b8d2f4e7c11")
MAX_SESSION_EVENTS = 100_000


class SessionNotFound(NotFound):
    code = "session_not_found"
    field = SESSION_HEADER


@dataclass(frozen=True)
class SessionState:
    session_id: uuid.UUID
    events: tuple[RecordedEvent, ...]  # this tenant's, in stream order

    @property
    def stream_id(self) -> str:
        return stream_of(self.session_id)

    @property
    def episode_open(self) -> bool:
        """Whether a turn now continues an episode (else it starts one)."""
        return bool(self.events) and self.events[-1].type != "episode.completed"

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


def parse_session(header: str) -> uuid.UUID:
    try:
        return uuid.UUID(header)
    except ValueError:
        raise SessionNotFound(f"'{header[:80]}' is not a session id (a UUID)") from None


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

    def for_request(self, header: str | None, user: str | None, tenant: str | None) -> SessionState:
        """The session a request is recorded in (see the module's docstring)."""
        if header:
            state = self.read(parse_session(header), tenant)
            if not state.events:
                raise SessionNotFound(f"no session {header} in this key's tenant: send the "
                                      f"{SESSION_HEADER} an answer carried, or none to start one")
            return state
        if user:
            return self.read(uuid.uuid5(USER_SESSIONS, f"{tenant or ''}\0{user}"), tenant)
        return SessionState(uuid.uuid4(), ())
