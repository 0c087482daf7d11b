"""Contract versions through the API, on SQLite and PostgreSQL: the evaluation team's view."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from access.keys import create_key
from api.app import create_app
from hcp.bootstrap import bootstrap
from hcp.settings import Settings

EXAMPLE = (Path(__file__).parents[2] / "examples/contracts/default.toml").read_text()


@pytest.fixture
def api(database_url: str, tmp_path: Path):
    container = bootstrap(Settings(database_url=database_url, data_dir=tmp_path))
    writer = create_key(container.engine, ["contracts:write", "contracts:read"], label="eval-team")
    reader = create_key(container.engine, ["contracts:read"], label="viewer")
    with TestClient(create_app(container)) as client:
        client.writer = {"Authorization": f"Bearer {writer}"}  # type: ignore[attr-defined]
        client.reader = {"Authorization": f"Bearer {reader}"}  # type: ignore[attr-defined]
        client.container = container  # type: ignore[attr-defined]
        yield client
    container.close()


def _draft(api, document: str = EXAMPLE, **extra):
    return api.post("/v1/contracts/default/versions", json={"document": document, **extra},
                    headers=api.writer)


def test_draft_publish_edit_cycle_with_history(api):
    assert _draft(api).status_code == 201
    published = api.post("/v1/contracts/default/versions/1/publish", headers=api.writer)
    assert published.status_code == 200 and published.json()["status"] == "published"
    assert len(published.json()["content_hash"]) == 64

    # publishing twice, and editing a published version, are conflicts
    assert api.post("/v1/contracts/default/versions/1/publish", headers=api.writer).status_code == 409
    edit = api.put("/v1/contracts/default/versions/1", json={"document": EXAMPLE}, headers=api.writer)
    assert edit.status_code == 409 and "new draft" in edit.json()["error"]["message"]

    # editing means a new draft whose parent is the published version
    reweighted = EXAMPLE.replace('id = "brevity"\nweight = 1.0', 'id = "brevity"\nweight = 4.0')
    draft = _draft(api, reweighted, parent_version=1).json()
    assert draft["version"] == 2 and draft["parent_version"] == 1 and draft["status"] == "draft"
    assert draft["content_hash"] != published.json()["content_hash"]

    history = api.get("/v1/contracts/default/history", headers=api.reader).json()
    # publishing the first version makes it serve the four specialists it declares
    assert [h["type"] for h in history] == [
        "contract.draft_created", "contract.published", *["contract.serving_moved"] * 4,
        "contract.draft_created"]
    assert {h["actor"] for h in history} == {"key:eval-team"}

    diff = api.get("/v1/contracts/default/diff?a=1&b=2", headers=api.reader).json()
    assert "brevity" in str(diff)


def test_invalid_document_lists_every_problem_and_stores_nothing(api):
    broken = EXAMPLE.replace('weight = 3.0', 'weight = -1.0').replace(
        'expression = "feedback.count > 0', 'expression = "feedback.count >>> 0')
    reply = _draft(api, broken)
    assert reply.status_code == 422
    problems = reply.json()["error"]["problems"]
    assert len(problems) >= 2
    assert any("helpfulness" in str(p) for p in problems)
    assert api.get("/v1/contracts", headers=api.reader).json() == []


HELPFULNESS = 'expression = "feedback.count > 0 ? (feedback.rating + 1.0) / 2.0 : 0.5"'


@pytest.mark.parametrize("expression", ["-" * 4000 + "0.5", "!" * 4000 + "true ? 0.5 : 0.5"])
def test_thousands_of_unary_operators_are_422_like_the_nesting_limit_on_every_route(api, expression):
    assert HELPFULNESS in EXAMPLE
    broken = EXAMPLE.replace(HELPFULNESS, f'expression = "{expression}"')
    _draft(api)  # version 1, a draft to edit

    replies = {"validate": api.post("/v1/contracts/validate", json={"document": broken}, headers=api.reader),
               "create": _draft(api, broken),
               "edit": api.put("/v1/contracts/default/versions/1", json={"document": broken},
                               headers=api.writer)}

    for route, reply in replies.items():
        assert reply.status_code == 422, (route, reply.text)
        error = reply.json()["error"]
        assert error["code"] == "invalid_contract" and "nesting deeper than 32" in error["message"], route
        assert error["field"] == "evaluation.criteria[0].expression", route
    assert [v["version"] for v in api.get("/v1/contracts", headers=api.reader).json()] == [1]
    assert api.get("/v1/contracts/default/versions/1", headers=api.reader).json()["document"] == EXAMPLE


def test_published_document_is_frozen_by_the_database(api):
    _draft(api)
    api.post("/v1/contracts/default/versions/1/publish", headers=api.writer)
    with pytest.raises(Exception, match="immutable"), api.container.engine.begin() as conn:
        conn.execute(text("UPDATE contract_versions SET document = 'x' WHERE version = 1"))


def test_scopes_are_checked(api):
    assert _draft(api).status_code == 201
    denied = api.post("/v1/contracts/default/versions/1/publish", headers=api.reader)
    assert denied.status_code == 403
    assert api.get("/v1/contracts").status_code == 401


def test_retire_only_published(api):
    _draft(api)
    assert api.post("/v1/contracts/default/versions/1/retire", json={}, headers=api.writer).status_code == 409
    api.post("/v1/contracts/default/versions/1/publish", headers=api.writer)
    retired = api.post("/v1/contracts/default/versions/1/retire", json={"reason": "superseded"},
                       headers=api.writer)
    assert retired.json()["status"] == "retired"
