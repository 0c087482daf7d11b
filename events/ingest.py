"""Turning client input into events: the checks a batch must pass before it is stored.

Besides the catalogue's schema, a core event that names registry objects (the
specialist and adapter version of a ``route.decided``, and the ``specialist``,
``adapter_version`` and ``contract`` of any core event's metadata) is checked against
the registry when the caller passes a ``references`` check: a serving record naming
``coding@99`` is refused (422, the field named) instead of stored. ``<specialist>@0``
names the bare base model (no adapter yet). A harness that runs ahead of the registry
marks such an event with ``"ahead_of_registry": true`` in its payload (kept, so the
record says so), or writes an ``x.`` type; neither is checked.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from events.catalogue import CUSTOM_PREFIX, PayloadInvalid, reserved_stream, validate_client_event
from events.derived import derived_stream
from events.model import EventMetadata, NewEvent
from events.store import Appended, Appender
from kernel.canonical import canonical_json
from kernel.json_input import JsonLimits, JsonRejected, check_json_value


@dataclass(frozen=True)
class ClientEvent:
    stream_id: str
    type: str
    payload: Any
    event_id: uuid.UUID | None = None
    schema_version: int | None = None  # None: the type's current version
    expected_seq: int | None = None
    occurred_at: datetime | None = None
    actor: str | None = None
    tenant: str | None = None
    specialist: str | None = None
    adapter_version: str | None = None
    contract: str | None = None
    causation_id: uuid.UUID | None = None
    correlation_id: uuid.UUID | None = None


class BatchRejected(ValueError):
    """The whole batch is refused; ``field`` points at the offending item and key."""

    def __init__(self, field: str, message: str, status: int = 422) -> None:
        super().__init__(f"{field}: {message}")
        self.field, self.message, self.status = field, message, status


@dataclass(frozen=True)
class IngestLimits:
    max_batch_events: int
    max_payload_bytes: int
    payload: JsonLimits = field(default_factory=JsonLimits)  # depth, keys, string length


@dataclass(frozen=True)
class Author:
    """Who writes a batch, as authenticated (never as claimed): stamped on every event.

    ``tenant`` None is an operator, who may name any tenant on each event; a tenant's
    writer stamps its own tenant and may not name another.
    """

    actor: str
    tenant: str | None = None


# The registry's answer to "is this <kind> known": None if so, else why not. Kinds:
# "specialist", "adapter" (an adapter version id), "contract" (NAME@VERSION).
ReferenceCheck = Callable[[str, str], str | None]
AHEAD_OF_REGISTRY = "ahead_of_registry"


def ingest(store: Appender, items: Sequence[ClientEvent], limits: IngestLimits,
           author: Author, references: ReferenceCheck | None = None,
           opens_derived: bool = False,
           server_events: Sequence[NewEvent] = ()) -> list[Appended]:
    """Validate every item (and its registry references, given a check), stamp actor and
    tenant from ``author``, then append the batch all-or-nothing. The client's ``actor``
    is kept as ``claimed_actor``. Only a caller that derives streams itself for ``author``
    (the chat gateway, OTLP ingest: ``opens_derived``) may create one (``events.derived``).
    ``server_events``: events the server itself adds to the same batch (built by the
    caller, unchecked here, e.g. the chat gateway's ``conversation.head``), appended after
    the client's."""
    if not items:
        raise BatchRejected("events", "the batch is empty")
    if len(items) > limits.max_batch_events:
        raise BatchRejected(
            "events", f"{len(items)} events exceed the batch limit of {limits.max_batch_events}", 413
        )
    batch = [_to_new_event(i, item, limits, author, opens_derived) for i, item in enumerate(items)]
    if references is not None:
        _check_references(items, references)
    return store.append([*batch, *server_events])


def _exempt(item: ClientEvent) -> bool:
    return item.type.startswith(CUSTOM_PREFIX) or item.payload.get(AHEAD_OF_REGISTRY) is True


def references_of(item: ClientEvent) -> list[tuple[str, str, str]]:
    """(field, kind, value) of every registry object a core event names."""
    if _exempt(item):
        return []
    found = [(f"metadata.{name}", kind, value) for name, kind, value in (
        ("specialist", "specialist", item.specialist),
        ("adapter_version", "adapter", item.adapter_version),
        ("contract", "contract", item.contract)) if value]
    if item.type == "route.decided":
        found += [(f"payload.{name}", kind, item.payload[name])
                  for name, kind in (("specialist", "specialist"), ("adapter_version", "adapter"))
                  if isinstance(item.payload.get(name), str)]
    return found


def _check_references(items: Sequence[ClientEvent], check: ReferenceCheck) -> None:
    answers: dict[tuple[str, str], str | None] = {}  # each distinct reference asked once
    for index, item in enumerate(items):
        if _exempt(item):
            continue
        for where, kind, value in references_of(item):
            if (kind, value) not in answers:
                answers[kind, value] = check(kind, value)
            problem = answers[kind, value]
            if problem is not None:
                raise BatchRejected(f"events[{index}].{where}", f"{problem} (a harness ahead of "
                                    f"the registry sets payload.{AHEAD_OF_REGISTRY} = true)")
        _check_pairing(index, item)


def _check_pairing(index: int, item: ClientEvent) -> None:
    # An adapter version serves its own specialist's slot: "chat" served by "coding@3" is
    # a harness bug, whatever the registry holds.
    pairs = [("metadata", item.specialist, item.adapter_version)]
    if item.type == "route.decided" and isinstance(item.payload, dict):
        pairs.append(("payload", item.payload.get("specialist"), item.payload.get("adapter_version")))
    for where, specialist, adapter in pairs:
        if isinstance(specialist, str) and isinstance(adapter, str) and "@" in adapter \
                and adapter.rsplit("@", 1)[0] != specialist:
            raise BatchRejected(f"events[{index}].{where}.adapter_version",
                                f"adapter '{adapter}' is not a version of specialist '{specialist}'")


def _to_new_event(index: int, item: ClientEvent, limits: IngestLimits, author: Author,
                  opens_derived: bool = False) -> NewEvent:
    if reserved_stream(item.stream_id):
        raise BatchRejected(f"events[{index}].stream_id",
                            f"'{item.stream_id}' is in a stream namespace reserved for the server")
    # Then, before anything walks the payload recursively: it must be storable as sent
    # (finite numbers, no lone surrogates or NUL, no duplicate keys) and within limits.
    try:
        check_json_value(item.payload, limits.payload, f"events[{index}].payload")
    except JsonRejected as exc:
        raise BatchRejected(exc.field, exc.message) from None
    try:
        version = validate_client_event(item.type, item.schema_version, item.payload)
    except PayloadInvalid as exc:
        raise BatchRejected(f"events[{index}].{exc.field}", exc.message) from None
    text = canonical_json(item.payload)  # measured here, then digested and stored as is
    size = len(text) if text.isascii() else len(text.encode())
    if size > limits.max_payload_bytes:
        raise BatchRejected(
            f"events[{index}].payload",
            f"{size} bytes exceed the payload limit of {limits.max_payload_bytes}", 413,
        )
    meta = EventMetadata(
        occurred_at=item.occurred_at, actor=author.actor, tenant=_tenant(index, item, author),
        specialist=item.specialist, adapter_version=item.adapter_version,
        contract=item.contract, causation_id=item.causation_id,
        correlation_id=item.correlation_id, claimed_actor=item.actor,
    )
    return NewEvent(
        stream_id=item.stream_id, type=item.type, payload=item.payload,
        event_id=item.event_id or uuid.uuid4(), schema_version=version, metadata=meta,
        expected_seq=item.expected_seq, payload_json=text,
        may_create=opens_derived or not derived_stream(item.stream_id),
    )


def _tenant(index: int, item: ClientEvent, author: Author) -> str | None:
    if author.tenant is None:
        return item.tenant  # an operator acts for the tenant it names (or for none)
    if item.tenant not in (None, author.tenant):
        raise BatchRejected(f"events[{index}].metadata.tenant",
                            "this key writes for its own tenant only", 403)
    return author.tenant
