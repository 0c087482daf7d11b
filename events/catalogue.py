"""The catalogue of event types: payload schemas, reserved namespaces, upcasters.

Known types are validated against a pydantic schema. Custom types live under ``x.``
and carry free JSON. Namespaces the server writes itself (contract edits, training,
registry) are reserved, so a client cannot forge a promotion or a contract change.

Payloads are stored exactly as written, under the schema version they were written
with. Readers see the current version: ``upcast`` walks the chain of upcasters
(v1 -> v2 -> ...), so old events never need rewriting (they can't be: the log is
append-only and the hash chain covers their digest).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from events.model import RecordedEvent

CUSTOM_PREFIX = "x."
RESERVED_PREFIXES = ("contract.", "reward.", "trigger.", "training.", "adapter.", "alias.",
                     "base_model.", "specialist.", "api_key.", "dry_run.", "webhook.",
                     "reevaluation.", "audit.", "session.expired", "conversation.",
                     "judge.")
# Streams the server writes (contract:<name>, specialist:<name>, training_run:<id>,
# base_model:<name>, api_key:<id>, ...): no client event may land on them, whatever its
# type, or it would show up in a contract's history or a run's journal. The packages
# that own them sit above this one; tests/unit/test_ingest.py checks each is covered.
RESERVED_STREAM_PREFIXES = ("contract:", "specialist:", "training_run:", "base_model:",
                            "api_key:", "dry_run:", "reward:", "trigger:", "alias:", "adapter:",
                            "audit:", "hcp:", "webhook:", "reevaluation:", "router:",
                            "conversation:", "judge:")


def reserved_stream(stream_id: str) -> bool:
    """Whether ``stream_id`` is in a namespace only the server writes (case-insensitive)."""
    return stream_id.lower().startswith(RESERVED_STREAM_PREFIXES)


class _Payload(BaseModel):
    # Unknown extra fields are kept: harnesses add context faster than schemas evolve.
    model_config = ConfigDict(extra="allow")


class SessionStarted(_Payload):
    harness: str | None = Field(None, description="Harness name or build the session runs in")
    user: str | None = Field(None, description="Pseudonymous user id")


class TurnUser(_Payload):
    text: str = Field(description="What the user said")


class RouteDecided(_Payload):
    specialist: str = Field(description="Mixture-of-LoRA slot chosen for this turn")
    adapter_version: str = Field(description="Adapter that served it, e.g. coding@3")
    scores: dict[str, float] | None = Field(None, description="Router scores per specialist")


class TurnAssistant(_Payload):
    text: str = Field(description="What the model answered")
    model: str | None = None
    tokens: int | None = Field(None, ge=0)


class ToolCalled(_Payload):
    call_id: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolResult(_Payload):
    call_id: str
    ok: bool
    output: Any = None
    error: str | None = None


class FeedbackGivenV1(_Payload):
    thumbs_up: bool


class FeedbackGiven(_Payload):
    rating: float | None = Field(None, ge=-1.0, le=1.0, description="-1 (bad) .. 1 (good)")
    thumbs: Literal["up", "down"] | None = None
    comment: str | None = None
    target_event_id: str | None = Field(None, description="The turn the feedback is about")


class TraceLinked(_Payload):
    trace_id: str = Field(description="The OpenTelemetry trace (hex) whose spans join this session")
    service: str | None = Field(None, description="The resource's service.name")


class EpisodeCompleted(_Payload):
    # None (or absent): the episode ended and nothing says how it went (an OpenTelemetry
    # root span whose status was left unset); the contract judges it by other signals.
    outcome: Literal["success", "failure", "abandoned"] | None = None
    score: float | None = None


@dataclass(frozen=True)
class EventType:
    name: str
    current_version: int
    schemas: dict[int, type[BaseModel]]
    summary: str


CORE_TYPES: dict[str, EventType] = {
    t.name: t
    for t in (
        EventType("session.started", 1, {1: SessionStarted}, "A session or conversation began"),
        EventType("turn.user", 1, {1: TurnUser}, "A user turn"),
        EventType("route.decided", 1, {1: RouteDecided}, "The router chose a specialist adapter"),
        EventType("turn.assistant", 1, {1: TurnAssistant}, "The model's answer to a user turn"),
        EventType("tool.called", 1, {1: ToolCalled}, "The model called a tool"),
        EventType("tool.result", 1, {1: ToolResult}, "A tool returned"),
        EventType("feedback.given", 2, {1: FeedbackGivenV1, 2: FeedbackGiven},
                  "User feedback; v1 had only thumbs_up"),
        EventType("episode.completed", 1, {1: EpisodeCompleted}, "The episode ended"),
        EventType("trace.linked", 1, {1: TraceLinked},
                  "An OpenTelemetry trace joined this session (POST /v1/traces)"),
    )
}

# A client type's name by the model of its current version: what writers build from.
TYPE_OF: dict[type[BaseModel], str] = {t.schemas[t.current_version]: t.name
                                       for t in CORE_TYPES.values()}


def typed(payload: _Payload) -> tuple[str, dict[str, Any]]:
    """(type, payload) of a client event built from its catalogue model: the type is the
    model's entry, the payload exactly the fields given (extra ones kept, none added), so
    what a writer records is what it wrote, checked as ingest will check it."""
    return TYPE_OF[type(payload)], payload.model_dump(mode="json", exclude_unset=True)


Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
UPCASTERS: dict[tuple[str, int], Upcaster] = {
    ("feedback.given", 1): lambda p: {
        **{k: v for k, v in p.items() if k != "thumbs_up"},
        "thumbs": "up" if p.get("thumbs_up") else "down",
    },
}


class PayloadInvalid(ValueError):
    """A client event that the catalogue refuses; ``field`` names what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def validate_client_event(event_type: str, schema_version: int | None, payload: Any) -> int:
    """Check a client-written event; return the schema version to store it under.

    ``schema_version`` None means "the type's current version": a client that does not
    say which version it writes gets today's schema, not the oldest one.
    """
    if not isinstance(payload, dict):
        raise PayloadInvalid("payload", "must be a JSON object")
    if event_type.startswith(RESERVED_PREFIXES):
        raise PayloadInvalid("type", f"'{event_type}' is in a namespace reserved for the server")
    if event_type.startswith(CUSTOM_PREFIX):
        if len(event_type) == len(CUSTOM_PREFIX):
            raise PayloadInvalid("type", "custom types need a name after 'x.'")
        return schema_version or 1
    known = CORE_TYPES.get(event_type)
    if known is None:
        raise PayloadInvalid(
            "type", f"unknown event type '{event_type}'; custom types must start with 'x.'"
        )
    schema_version = schema_version or known.current_version
    schema = known.schemas.get(schema_version)
    if schema is None:
        raise PayloadInvalid(
            "schema_version", f"'{event_type}' has versions {sorted(known.schemas)}"
        )
    try:
        schema.model_validate(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise PayloadInvalid(f"payload.{where}" if where else "payload", first["msg"]) from None
    return schema_version


def upcast(event_type: str, schema_version: int, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Bring a stored payload up to the type's current schema version."""
    while (step := UPCASTERS.get((event_type, schema_version))) is not None:
        payload, schema_version = step(payload), schema_version + 1
    return schema_version, payload


def upcast_event(event: RecordedEvent) -> RecordedEvent:
    """The event with its payload brought to the current schema version: the one path
    every reader takes (the SQL store, the Kafka reader)."""
    version, payload = upcast(event.type, event.schema_version, event.payload)
    if version == event.schema_version:
        return event
    return replace(event, schema_version=version, payload=payload)


def catalogue_document() -> list[dict[str, Any]]:
    """The catalogue as JSON (served at /v1/catalogue): names, versions, JSON Schemas; the
    client types first, then the types the server writes itself (``events.server_events``:
    registered by their owners' modules, which the composition root imports)."""
    from events.server_events import server_catalogue  # it registers its upcasters here

    return [
        {
            "type": t.name,
            "summary": t.summary,
            "current_version": t.current_version,
            "written_by": "client",
            "schemas": {str(v): s.model_json_schema() for v, s in t.schemas.items()},
        }
        for t in CORE_TYPES.values()
    ] + server_catalogue()
