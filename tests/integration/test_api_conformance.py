"""Every answer matches the OpenAPI document, on a world with something in it: a served,
scored and trained chat exchange, a draft, a dry run, an audit run, a webhook. Every GET
route (and the writes that made them) is asked with an admin key and with a tenant's read
key, and schemathesis' conformance checks judge each answer: the body's schema (formats
included: every ``date-time`` is RFC 3339 with an offset), the content type, the headers
and the status. The fuzzing test (test_api_schemathesis.py) meets mostly empty answers;
this one meets full ones."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.chat_world import ChatWorld, chat_world, served_and_trained
from tests.serving_world import CONTRACT, DOCUMENT

pytest.importorskip("peft")
pytestmark = [pytest.mark.train]
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance,
          content_type_conformance, response_headers_conformance]
READS = ("events:read", "rewards:read", "registry:read", "lineage:read", "contracts:read",
         "audit:read", "chat:write", "events:write", "webhooks:read")
ADMIN = ("admin",)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[
        tuple[ChatWorld, dict[str, str], dict[str, dict[str, str]], list[tuple[str, Any]]]]:
    root = tmp_path_factory.mktemp("conformance")
    with chat_world(root, sqlite_template, webhook_allowed_targets=["127.0.0.1"]) as found:
        keys = {"admin": found.key(None, ADMIN), "tenant": found.key("acme", READS)}
        values = served_and_trained(found, root, keys["tenant"])
        writes = _writes(found, keys["admin"], values)
        yield found, values, keys, writes


def _writes(world: ChatWorld, admin: dict[str, str], values: dict[str, str]) -> list[tuple[str, Any]]:
    """The answers of the writes that make the rest of the world (checked too)."""
    client, made = world.client, []
    draft = client.post(f"/v1/contracts/{CONTRACT}/versions", headers=admin,
                        json={"document": DOCUMENT.replace("chat completions under test", "v2")})
    made.append((f"POST /v1/contracts/{CONTRACT}/versions", draft))
    dry = client.post(f"/v1/contracts/{CONTRACT}/versions/1/dry-run", headers=admin, json={})
    made.append((f"POST /v1/contracts/{CONTRACT}/versions/{{version}}/dry-run", dry))
    values["dry_run_job"] = dry.json().get("job", {}).get("job_id", "none")
    audit = client.post("/v1/audit/runs", headers=admin, json={"scope": "all"})
    made.append(("POST /v1/audit/runs", audit))
    values["audit_job"] = audit.json().get("job_id", "none")
    hook = client.post("/v1/webhooks", headers=admin, json={
        "url": "http://127.0.0.1:9/hook", "event_types": ["contract.published"],
        "secret": "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})
    made.append(("POST /v1/webhooks", hook))
    values["subscription_id"] = str(hook.json().get("subscription_id", "none"))
    reward = client.get("/v1/rewards", headers=admin).json()
    values["reward_id"] = str((reward.get("rewards") or [{}])[0].get("reward_id", "none"))
    return made


def _value(template: str, name: str, values: dict[str, str]) -> str | None:
    if name == "name":
        return {"contracts": CONTRACT, "base-models": "tiny"}.get(template.split("/")[2], "chat")
    if name == "path" and template.startswith("/v1/adapters/"):
        return "adapter_config.json"
    if name == "job_id":
        return values["audit_job"] if "/audit/" in template else values["dry_run_job"]
    return {"version": "1", "a": "1", "b": "1", "model_id": "chat", "old": "1",
            "at": datetime.now(UTC).isoformat()}.get(name) or values.get(name)


def _calls(schema: schemathesis.BaseSchema, values: dict[str, str]) -> Iterator[Any]:
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.method.upper() != "GET":
            continue
        params = {p.name: p for p in operation.iter_parameters()}
        filled = {name: _value(operation.path, name, values) for name, p in params.items()
                  if p.is_required and p.location in ("path", "query")}
        if None in filled.values():
            continue
        path = {n: v for n, v in filled.items() if params[n].location == "path"}
        query = {n: v for n, v in filled.items() if params[n].location == "query"}
        yield operation.Case(path_parameters=path, query=query)


def test_every_answer_of_a_full_world_matches_the_document(world) -> None:
    found, values, keys, writes = world
    schema = schemathesis.openapi.from_asgi("/openapi.json", found.client.app)
    failures, answered = [], {"admin": 0, "tenant": 0}
    for label, response in writes:
        if not 200 <= response.status_code < 300:
            failures.append(f"{label}: {response.status_code} {response.text[:300]}")
    for case in _calls(schema, values):
        for who, headers in keys.items():
            response = case.call(headers=headers)
            answered[who] += response.status_code == 200
            try:
                case.validate_response(response, checks=CHECKS, headers=headers)
            except BaseExceptionGroup as group:
                failures.append(f"{who} {case.operation.label}: {_short(group)}")
    assert answered["admin"] >= 50 and answered["tenant"] >= 35, answered
    assert failures == [], "\n".join(failures)


def _short(group: BaseExceptionGroup) -> str:
    return re.sub(r"\s+", " ", str(group.exceptions[0]))[:600]
