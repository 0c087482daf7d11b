"""POST /v1/events bodies: the fast path (``ClientBatch``) accepts exactly what the model
(``EventBatchIn``) accepts, with the same values, and leaves every error to the model."""

from __future__ import annotations

import copy
import uuid
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from api.schemas.event_batch import ClientBatch, Declined, _fast, client_event
from api.schemas.events import EventBatchIn

FAST = TypeAdapter(ClientBatch)
ID = "3f2b8c1e-9a4d-4e2f-8b7a-1c2d3e4f5a6b"


def event(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"stream_id": "s-1", "type": "turn.user", "payload": {"text": "hi", "n": 1},
                            "event_id": ID, "metadata": {"actor": "user-1", "specialist": "coding"}}
    for key, value in changes.items():
        if value is DROP:
            base.pop(key, None)
        else:
            base[key] = value
    return base


DROP = object()
PLAIN = [
    event(),
    event(event_id=DROP, metadata=DROP),
    event(schema_version=1, expected_seq=0, event_id=ID.upper()),
    event(schema_version=2**31 - 1, expected_seq=2**63 - 1, event_id=None),
    event(metadata={"occurred_at": "2026-01-02T03:04:05+02:00", "tenant": "t", "contract": "c@1",
                    "adapter_version": "a" * 200, "causation_id": ID, "correlation_id": None}),
    event(metadata={}, stream_id="x" * 200, type="y" * 200, payload={}),
    event(metadata={"occurred_at": None, "actor": None}),
    event(metadata={"occurred_at": 1_700_000_000}),  # as pydantic reads it: one TypeAdapter
]
# Valid, but not the plain shape: the model takes them (and must give the same result).
UNUSUAL = [
    event(event_id=ID.replace("-", "")),
    event(event_id="urn:uuid:" + ID),
    event(schema_version="2"),
    event(expected_seq=3.0),
    event(schema_version=True),  # pydantic's lax mode reads it as 1
]
INVALID = [
    event(stream_id=""), event(stream_id="x" * 201), event(stream_id=7), event(type=None),
    event(payload=[]), event(payload=None), event(payload=DROP), event(event_id="not-a-uuid"),
    event(event_id=ID + "0"), event(schema_version=0), event(schema_version=2**31),
    event(expected_seq=-1), event(expected_seq=2**63),
    event(metadata=None), event(metadata=[]), event(metadata={"actor": "a" * 201}),
    event(metadata={"specialist": "s" * 101}), event(metadata={"nope": 1}),
    event(metadata={"occurred_at": "9999-12-31T23:59:59-23:59"}),
    event(metadata={"occurred_at": "yesterday"}), event(metadata={"causation_id": 5}),
    event(extra=1), "not an object",
]


@pytest.mark.parametrize("item", PLAIN + UNUSUAL)
def test_valid_events_give_what_the_model_gives(item: dict[str, Any]) -> None:
    body = {"events": [item, event()]}
    expected = [client_event(e) for e in EventBatchIn.model_validate(copy.deepcopy(body)).events]

    assert list(FAST.validate_python(body)) == expected


@pytest.mark.parametrize("item", PLAIN)
def test_the_plain_shape_takes_the_fast_path(item: dict[str, Any]) -> None:
    events = _fast({"events": [item]})

    assert events[0].event_id in (None, uuid.UUID(ID))


@pytest.mark.parametrize("item", UNUSUAL + INVALID)
def test_anything_else_is_left_to_the_model(item: Any) -> None:
    with pytest.raises(Declined):
        _fast({"events": [event(), item]})


@pytest.mark.parametrize("body", [
    *({"events": [event(), item]} for item in INVALID),
    {}, {"events": None}, {"events": {}}, {"events": [], "more": 1}, [], None, "x",
])
def test_invalid_bodies_raise_the_models_errors(body: Any) -> None:
    with pytest.raises(ValidationError) as model:
        EventBatchIn.model_validate(copy.deepcopy(body))
    with pytest.raises(ValidationError) as fast:
        FAST.validate_python(body)

    assert _errors(fast.value) == _errors(model.value)


def _errors(exc: ValidationError) -> list[tuple[Any, ...]]:
    return [(e["loc"], e["type"], e["msg"]) for e in exc.errors()]


def test_the_fast_path_sets_every_field_of_a_client_event() -> None:
    from api.schemas.event_batch import _FIELDS

    built = _fast({"events": [event()]})[0]

    assert set(vars(built)) == _FIELDS


@pytest.mark.parametrize("text", [ID, ID.upper(), "00000000-0000-0000-0000-000000000000",
                                  "ffffffff-ffff-ffff-ffff-ffffffffffff"])
def test_the_fast_path_reads_a_uuid_as_uuid_reads_it(text: str) -> None:
    built = _fast({"events": [event(event_id=text, metadata={"causation_id": text})]})[0]
    expected = uuid.UUID(text)

    for read in (built.event_id, built.causation_id):
        assert type(read) is uuid.UUID
        assert (read, read.int, read.is_safe, str(read), hash(read)) == (
            expected, expected.int, expected.is_safe, str(expected), hash(expected))
