"""The events the server writes itself, typed: one pydantic model per type and version.

Each owning package declares its types (``access.key_log``, ``contract.events``,
``trainer.registry.events`` …) as subclasses of ``ServerEvent``, naming the type once
(``TYPE``), its current schema version (``VERSION``) and, for every older version still
in some log, an upcaster to the next one. Writers construct the model; readers that
judge or project an event parse it with ``logged`` from the bytes *as stored*, so they
know which version it was written under (``Logged.stored_version``): an event is never
rewritten (the hash chain covers its digest), it is read forward.

Declaring a subclass registers it: the catalogue (``GET /v1/catalogue``) lists it beside
the client types, and the store's generic ``upcast`` brings its old payloads forward too.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from events.catalogue import UPCASTERS
from events.model import EventMetadata, NewEvent, RecordedEvent
from kernel.clock import utc

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
SERVER_TYPES: dict[str, type[ServerEvent]] = {}


class ServerEvent(BaseModel):
    """A payload the server writes. Subclasses set ``TYPE``, ``VERSION`` and ``SUMMARY``;
    ``UPCASTERS[v]`` turns a version-``v`` payload into a version ``v + 1`` one."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    TYPE: ClassVar[str]
    VERSION: ClassVar[int] = 1
    SUMMARY: ClassVar[str] = ""
    UPCASTERS: ClassVar[dict[int, Upcaster]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("TYPE")
        if name is None:
            return  # an abstract base of several types
        if name in SERVER_TYPES and SERVER_TYPES[name].__qualname__ != cls.__qualname__:
            raise TypeError(f"event type {name!r} is declared twice")
        missing = [v for v in range(1, cls.VERSION) if v not in cls.UPCASTERS]
        if missing:
            raise TypeError(f"{name}: no upcaster from version(s) {missing}")
        SERVER_TYPES[name] = cls
        for version, step in cls.UPCASTERS.items():
            UPCASTERS[(name, version)] = step

    def payload(self) -> dict[str, Any]:
        """The payload as stored: JSON types only, every field written (None included)."""
        return self.model_dump(mode="json")

    def new_event(self, stream_id: str, metadata: EventMetadata,
                  expected_seq: int | None = None) -> NewEvent:
        return NewEvent(stream_id=stream_id, type=self.TYPE, payload=self.payload(),
                        schema_version=self.VERSION, metadata=metadata, expected_seq=expected_seq)


E = TypeVar("E", bound=ServerEvent)


@dataclass(frozen=True)
class Logged(Generic[E]):
    """A server event as the log holds it: the typed payload (brought to the current
    version) and where, when and by whom it was written."""

    event: E
    position: int
    event_id: uuid.UUID
    stream_id: str
    recorded_at: datetime
    metadata: EventMetadata
    stored_version: int  # the version it was written under (older ones were upcast)

    @property
    def actor(self) -> str:
        return self.metadata.actor or ""

    @property
    def type(self) -> str:
        return self.event.TYPE

    def at(self) -> str:
        """How a finding names the event: its type and position."""
        return f"{self.event.TYPE} at position {self.position}"


class NotAServerEvent(ValueError):
    """An event that does not parse as the server type it claims to be."""


def logged(recorded: RecordedEvent) -> Logged[ServerEvent]:
    """Parse a stored event (raw, or already upcast by the store) as its server type.

    Raises:
        NotAServerEvent: the type is not a server type, the version is unknown, or the
            payload does not fit its schema.
    """
    cls = SERVER_TYPES.get(recorded.type)
    if cls is None:
        raise NotAServerEvent(f"{recorded.type!r} is not a type the server writes")
    version, payload = recorded.schema_version, recorded.payload
    if not 1 <= version <= cls.VERSION:
        raise NotAServerEvent(f"{recorded.type} has no schema version {version} "
                              f"(versions 1..{cls.VERSION})")
    stored = version
    while version < cls.VERSION:
        payload, version = cls.UPCASTERS[version](dict(payload)), version + 1
    try:
        event = cls.model_validate(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "payload"
        raise NotAServerEvent(f"{recorded.type} v{stored}: {where}: {first['msg']}") from None
    return Logged(event, recorded.position, recorded.event_id, recorded.stream_id,
                  utc(recorded.recorded_at), recorded.metadata, stored)


def as_logged(event: E, recorded: RecordedEvent) -> Logged[E]:
    """The model a writer just appended, with where the store put it (no re-parse)."""
    return Logged(event, recorded.position, recorded.event_id, recorded.stream_id,
                  utc(recorded.recorded_at), recorded.metadata, event.VERSION)


def server_catalogue() -> list[dict[str, Any]]:
    """The server's types for the catalogue document: names, versions, JSON Schemas."""
    return [{"type": name, "summary": cls.SUMMARY, "current_version": cls.VERSION,
             "written_by": "server", "schemas": {str(cls.VERSION): cls.model_json_schema()}}
            for name, cls in sorted(SERVER_TYPES.items())]
