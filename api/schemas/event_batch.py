"""The body of POST /v1/events, validated into ``ClientEvent``s without a model per event.

Building an ``EventIn`` and a ``MetadataIn`` per event, then a ``ClientEvent`` from
them, cost more than parsing the body. ``ClientBatch`` checks the plain shape almost
every client sends (exact types, bounds, canonical UUID text) and builds the
``ClientEvent``s directly. Anything else, valid or not, takes the model
(``EventBatchIn``) exactly as before: the fast path accepts only bodies the model
accepts, with the same values, so every 422 (its message, the field it names) and every
unusual-but-valid input (an id without hyphens, a numeric string for an int) is the
model's. The OpenAPI schema is the model's too.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from typing import Any

from pydantic import GetCoreSchemaHandler, TypeAdapter, ValidationError
from pydantic_core import core_schema

from api.schemas.common import INT32_MAX, INT64_MAX, UtcDatetime
from api.schemas.events import EventBatchIn, EventIn, MetadataIn
from events.ingest import ClientEvent
from kernel.uuids import uuid_of_int

_UUID_TEXT = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_EVENT_KEYS = frozenset(EventIn.model_fields)
_METADATA_KEYS = frozenset(MetadataIn.model_fields)
# The string fields of MetadataIn with their max_length (read from the model, so the two
# cannot drift apart).
_METADATA_TEXT = {name: next(m.max_length for m in field.metadata if hasattr(m, "max_length"))
                  for name, field in MetadataIn.model_fields.items()
                  if name not in ("occurred_at", "causation_id", "correlation_id")}
_TIME = TypeAdapter(UtcDatetime)


class Declined(Exception):
    """The fast path does not vouch for this body: the model decides."""


class ClientBatch(list[ClientEvent]):
    """The events of a POST /v1/events body (the ``EventBatchIn`` schema), in order."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler
                                     ) -> core_schema.CoreSchema:
        return core_schema.no_info_wrap_validator_function(
            _validate, handler.generate_schema(EventBatchIn))


def fast_client_batch(body: Any) -> ClientBatch:
    """The batch of a parsed body in the plain shape; ``Declined`` if the model decides."""
    return ClientBatch(_fast(body))


def _validate(value: Any, model: core_schema.ValidatorFunctionWrapHandler) -> ClientBatch:
    try:
        return fast_client_batch(value)
    except Declined:
        batch: EventBatchIn = model(value)
        return ClientBatch(client_event(e) for e in batch.events)


def client_event(e: EventIn) -> ClientEvent:
    """The ``ClientEvent`` of a validated model (the slow path)."""
    meta = e.metadata  # its fields read directly: model_dump() per event costs more
    return ClientEvent(
        stream_id=e.stream_id, type=e.type, payload=e.payload, event_id=e.event_id,
        schema_version=e.schema_version, expected_seq=e.expected_seq,
        occurred_at=meta.occurred_at, actor=meta.actor, tenant=meta.tenant,
        specialist=meta.specialist, adapter_version=meta.adapter_version, contract=meta.contract,
        causation_id=meta.causation_id, correlation_id=meta.correlation_id)


def _fast(body: Any) -> list[ClientEvent]:
    if type(body) is not dict or body.keys() != {"events"} or type(body["events"]) is not list:
        raise Declined
    return [_event(e) for e in body["events"]]


def _event(e: Any) -> ClientEvent:
    if type(e) is not dict or not _EVENT_KEYS.issuperset(e):
        raise Declined
    meta = _metadata(e.get("metadata", _NO_METADATA))
    return _client_event({
        "stream_id": _text(e.get("stream_id"), 200), "type": _text(e.get("type"), 200),
        "payload": _object(e.get("payload")), "event_id": _uuid(e.get("event_id")),
        "schema_version": _int(e.get("schema_version"), 1, INT32_MAX),
        "expected_seq": _int(e.get("expected_seq"), 0, INT64_MAX),
        "occurred_at": _time(meta.get("occurred_at")), "actor": meta.get("actor"),
        "tenant": meta.get("tenant"), "specialist": meta.get("specialist"),
        "adapter_version": meta.get("adapter_version"), "contract": meta.get("contract"),
        "causation_id": _uuid(meta.get("causation_id")),
        "correlation_id": _uuid(meta.get("correlation_id"))})


# ClientEvent is a frozen dataclass: its __init__ sets each of its 14 fields through
# object.__setattr__, 3 us an event, more than checking it. Every field is given here
# (the dict above names them all), and the class has no __post_init__ or slots to skip
# (checked at import; tests/unit/test_event_batch.py compares with the constructor).
_FIELDS = frozenset(f.name for f in dataclasses.fields(ClientEvent))
assert not hasattr(ClientEvent, "__post_init__") and not hasattr(ClientEvent, "__slots__")


def _client_event(values: dict[str, Any]) -> ClientEvent:
    event = object.__new__(ClientEvent)
    event.__dict__.update(values)
    return event


_NO_METADATA: dict[str, Any] = {}


def _metadata(meta: Any) -> dict[str, Any]:
    if type(meta) is not dict or not _METADATA_KEYS.issuperset(meta):
        raise Declined
    for name, most in _METADATA_TEXT.items():
        value = meta.get(name)
        if value is not None and (type(value) is not str or len(value) > most):
            raise Declined
    return meta


def _text(value: Any, most: int) -> str:
    if type(value) is not str or not 1 <= len(value) <= most:
        raise Declined
    return value


def _object(value: Any) -> dict[str, Any]:
    if type(value) is not dict:
        raise Declined
    return value


def _int(value: Any, least: int, most: int) -> int | None:
    if value is None:
        return None
    if type(value) is not int or not least <= value <= most:
        raise Declined
    return value


# uuid.UUID(text) strips prefixes and braces and checks the length in Python, 2 us an
# event; canonical text (checked here) needs only its hex read (kernel/uuids.py;
# tests/unit/test_event_batch.py compares with UUID(text)).
def _uuid(value: Any) -> uuid.UUID | None:
    if value is None:
        return None
    if type(value) is not str or _UUID_TEXT.fullmatch(value) is None:
        raise Declined
    return uuid_of_int(int(value.replace("-", ""), 16))


def _time(value: Any) -> Any:
    if value is None:
        return None
    try:
        return _TIME.validate_python(value)
    except ValidationError:
        raise Declined from None
