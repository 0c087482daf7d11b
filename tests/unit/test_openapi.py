"""The OpenAPI document: a schema for every success body, every error status documented
with the one error body, so clients can be generated from it."""

from __future__ import annotations

from typing import Any

import pytest

from api.app import create_app

SPEC = create_app().openapi()
OPERATIONS = [(f"{method.upper()} {path}", op) for path, item in SPEC["paths"].items()
              for method, op in item.items()]
UNSECURED = {"GET /healthz", "GET /livez"}  # health answers carry the checks, not ErrorOut
ERROR_REF = "#/components/schemas/ErrorOut"


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    return SPEC["components"]["schemas"][ref.split("/")[-1]] if ref else schema


def test_there_are_operations_to_check() -> None:
    assert len(OPERATIONS) >= 50


@pytest.mark.parametrize(("label", "op"), OPERATIONS, ids=[label for label, _ in OPERATIONS])
def test_every_success_response_has_a_non_empty_schema(label: str, op: dict[str, Any]) -> None:
    successes = {status: r for status, r in op["responses"].items() if status.startswith("2")}
    assert successes, f"{label} documents no 2xx response"
    for status, response in successes.items():
        contents = response.get("content", {})
        assert contents, f"{label} {status} has no content"
        for media, content in contents.items():
            schema = content.get("schema") or {}
            resolved = _resolve(schema)
            assert resolved, f"{label} {status} {media}: empty schema"
            assert resolved.get("type") or resolved.get("properties") or resolved.get("items") \
                or resolved.get("anyOf"), f"{label} {status} {media}: schema says nothing: {schema}"


@pytest.mark.parametrize(("label", "op"), [o for o in OPERATIONS if o[0] not in UNSECURED],
                         ids=[label for label, _ in OPERATIONS if label not in UNSECURED])
def test_every_secured_operation_documents_auth_throttle_and_outage(label: str, op: dict[str, Any]) -> None:
    assert {"401", "403", "422", "429", "503"} <= set(op["responses"]), label
    assert op["responses"]["429"]["headers"]["Retry-After"]


@pytest.mark.parametrize(("label", "op"), OPERATIONS, ids=[label for label, _ in OPERATIONS])
def test_every_error_response_has_the_one_error_body(label: str, op: dict[str, Any]) -> None:
    for status, response in op["responses"].items():
        if status.startswith(("4", "5")) and label not in UNSECURED:
            schema = response["content"]["application/json"]["schema"]
            assert schema == {"$ref": ERROR_REF}, f"{label} {status}: {schema}"


@pytest.mark.parametrize(("label", "op"), [o for o in OPERATIONS if "requestBody" in o[1]],
                         ids=[label for label, op in OPERATIONS if "requestBody" in op])
def test_operations_with_a_body_document_malformed_and_too_large(label: str, op: dict[str, Any]) -> None:
    assert {"400", "413"} <= set(op["responses"]), label


def test_no_validation_error_shape_other_than_ours() -> None:
    assert "HTTPValidationError" not in SPEC["components"]["schemas"]


@pytest.mark.parametrize(("label", "op"), OPERATIONS, ids=[label for label, _ in OPERATIONS])
def test_no_json_success_body_is_documented_as_a_bare_string(label: str, op: dict[str, Any]) -> None:
    for status, response in op["responses"].items():
        schema = response.get("content", {}).get("application/json", {}).get("schema")
        if status.startswith("2") and schema is not None:
            assert schema != {"type": "string"}, f"{label} {status}: a JSON body documented as a string"


@pytest.mark.parametrize(("label", "model"), [("GET /v1/events", "EventPage"),
                                              ("GET /v1/streams/{stream_id}", "EventPage"),
                                              ("GET /v1/events/{event_id}", "RecordedEventOut")])
def test_the_log_reads_document_their_bodies(label: str, model: str) -> None:
    op = dict(OPERATIONS)[label]
    schema = op["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": f"#/components/schemas/{model}"}
    assert "payload" in SPEC["components"]["schemas"]["RecordedEventOut"]["properties"]
