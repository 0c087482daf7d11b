"""The catalogue: which client events are accepted, and how old payloads are upcast."""

from __future__ import annotations

import pytest

from events.catalogue import (
    CORE_TYPES,
    PayloadInvalid,
    catalogue_document,
    upcast,
    validate_client_event,
)


def test_a_valid_core_event_keeps_its_schema_version() -> None:
    assert validate_client_event("turn.user", 1, {"text": "hi", "lang": "en"}) == 1
    assert validate_client_event("feedback.given", 1, {"thumbs_up": True}) == 1


def test_custom_types_carry_free_json() -> None:
    assert validate_client_event("x.anything", 3, {"whatever": [1, {"a": None}]}) == 3


@pytest.mark.parametrize(("event_type", "version", "payload", "field"), [
    ("turn.user", 1, {}, "payload.text"),
    ("turn.user", 1, {"text": 5}, "payload.text"),
    ("turn.assistant", 1, {"text": "a", "tokens": -1}, "payload.tokens"),
    ("feedback.given", 2, {"rating": 3}, "payload.rating"),
    ("turn.user", 1, ["not", "an", "object"], "payload"),
    ("turn.user", 9, {"text": "hi"}, "schema_version"),
    ("no.such.type", 1, {}, "type"),
    ("x.", 1, {}, "type"),
    ("adapter.promoted", 1, {}, "type"),
    ("contract.published", 1, {}, "type"),
])
def test_invalid_events_name_the_offending_field(event_type: str, version: int, payload: object,
                                                 field: str) -> None:
    with pytest.raises(PayloadInvalid) as info:
        validate_client_event(event_type, version, payload)
    assert info.value.field == field


def test_upcast_brings_old_versions_to_the_current_one() -> None:
    assert upcast("feedback.given", 1, {"thumbs_up": True, "comment": "ok"}) == (
        2, {"thumbs": "up", "comment": "ok"})
    assert upcast("feedback.given", 2, {"rating": 0.5}) == (2, {"rating": 0.5})
    assert upcast("turn.user", 1, {"text": "hi"}) == (1, {"text": "hi"})


def test_every_upcast_result_is_valid_under_the_current_schema() -> None:
    version, payload = upcast("feedback.given", 1, {"thumbs_up": False})
    assert version == CORE_TYPES["feedback.given"].current_version
    CORE_TYPES["feedback.given"].schemas[version].model_validate(payload)


def test_the_catalogue_document_lists_every_type_with_json_schemas() -> None:
    document = {entry["type"]: entry for entry in catalogue_document()}
    assert {t for t, e in document.items() if e["written_by"] == "client"} == set(CORE_TYPES)
    feedback = document["feedback.given"]
    assert feedback["current_version"] == 2
    assert set(feedback["schemas"]) == {"1", "2"}
    assert "text" in document["turn.user"]["schemas"]["1"]["properties"]
