"""Domain errors of the event log; the API maps each to one HTTP status."""

from __future__ import annotations

import uuid

from kernel.errors import Conflict, Forbidden, NotFound


class EventLogError(Conflict):
    field: str | None = "events"


class EventIdConflict(EventLogError):
    """The same event_id was already stored with different content (HTTP 409)."""

    code = "event_id_conflict"

    def __init__(self, event_id: uuid.UUID, index: int | None = None) -> None:
        self.event_id, self.index = event_id, index
        self.field = f"events[{index}].event_id" if index is not None else "event_id"
        super().__init__(f"event {event_id} already exists with different content")


class WrongExpectedSeq(EventLogError):
    """Optimistic concurrency: the stream moved on since the writer looked (HTTP 409)."""

    code = "wrong_expected_seq"

    def __init__(self, stream_id: str, expected: int, actual: int, index: int | None = None):
        self.stream_id, self.expected, self.actual = stream_id, expected, actual
        self.field = f"events[{index}].expected_seq" if index is not None else "expected_seq"
        super().__init__(
            f"stream '{stream_id}' is at seq {actual}, the writer expected {expected}"
        )


class StreamOfAnotherTenant(Forbidden):
    """Every event of a stream belongs to one tenant: the stream's last event names
    another tenant than the event being appended (HTTP 403)."""

    code = "stream_of_another_tenant"

    def __init__(self, stream_id: str, index: int | None = None) -> None:
        self.stream_id, self.index = stream_id, index
        self.field = f"events[{index}].stream_id" if index is not None else "stream_id"
        super().__init__(f"stream '{stream_id}' belongs to another tenant")


class StreamNotOpen(NotFound):
    """A client wrote a stream the server derives (``events.derived``) that is not open
    in its tenant: missing, or another tenant's, answered alike (HTTP 404)."""

    code = "stream_not_found"

    def __init__(self, stream_id: str, index: int | None = None) -> None:
        self.stream_id, self.index = stream_id, index
        self.field = f"events[{index}].stream_id" if index is not None else "stream_id"
        super().__init__(f"no stream '{stream_id}' in this key's tenant: the server opens the "
                         "streams it derives (a chat user's session, an OTLP conversation); a "
                         "client appends to its own once they exist")
