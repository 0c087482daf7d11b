"""The console over HTTP, on SQLite and PostgreSQL: what each page shows, who may see and do
what, and the two actions (moving an alias, publishing a draft after its dry run).

The browser tests (tests/e2e/test_console_browser.py) look at the same pages as a person
does; these check the server's answers without a browser, on both backends.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from tests.integration.console_data import ConsoleData, build
from tests.unit.trainer_core import fixtures

container, recorder = fixtures.container, fixtures.recorder
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
PROOF = re.compile(r'name="proof" value="([^"]+)"')


@pytest.fixture
def console(container, tmp_path) -> tuple[TestClient, ConsoleData]:
    data = build(container, tmp_path)
    return TestClient(create_app(container), follow_redirects=False), data


def sign_in(client: TestClient, key: str) -> None:
    answer = client.post("/console/sign-in", data={"key": key, "next": "/console"})
    assert answer.status_code == 303, answer.text
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/console" in cookie
    assert key not in cookie and key not in answer.headers["location"]


def get(client: TestClient, path: str, status: int = 200) -> str:
    answer = client.get(path)
    assert answer.status_code == status, f"{path}: {answer.status_code} {answer.text[:500]}"
    if status == 200:
        if "<html" in answer.text:  # a page, not a fragment
            assert answer.text.count("<h1") == 1, path
        assert "script-src 'self'" in answer.headers["content-security-policy"]
    return answer.text


def json_block(html: str, block_id: str) -> dict:
    found = re.search(rf'<script type="application/json" id="{block_id}">(.*?)</script>', html, re.S)
    assert found, block_id
    return json.loads(found[1])


def chart(html: str, canvas_id: str) -> dict:
    found = re.search(rf"<canvas id=\"{canvas_id}\" data-chart='([^']*)'", html)
    assert found, canvas_id
    return json.loads(found[1].replace("&#34;", '"').replace("&amp;", "&"))


def csrf_of(html: str) -> str:
    return CSRF.search(html)[1]


def test_pages_show_an_admin_and_an_auditor_what_they_ask(console):
    client, data = console
    assert client.get("/").headers["location"] == "/console"
    assert client.get("/dashboard").status_code == 307
    assert client.get("/console/specialists").headers["location"].startswith(
        "/console/sign-in?next=%2Fconsole%2Fspecialists")
    assert client.post("/console/sign-in", data={"key": "hcp_nope_nope"}).status_code == 401
    sign_in(client, data.keys["auditor"])

    listed = get(client, "/console/specialists")
    assert "Serving contract" in listed and "/console/contracts/default/1" in listed
    specialist = get(client, "/console/specialists/coding")
    assert "reviewed by hand" in specialist and data.root in specialist
    assert re.search(r'This server serves under <a href="/console/contracts/default/1">default@1</a>'
                     r' <span class="muted">\(HCP_SERVING_CONTRACT is default\)', specialist)
    assert "Move alias" not in specialist  # registry:read only

    page = get(client, f"/console/adapters/{data.successor}")
    graph = json_block(page, "lineage-data")
    ids = {n["data"]["id"] for n in graph["nodes"]}
    assert graph["ancestors"] == [data.root] and {data.root, "base:hcp-tiny", "contract:default@1"} <= ids
    assert {"source": data.root, "target": data.successor} in [
        {k: e["data"][k] for k in ("source", "target")} for e in graph["edges"]]
    rewards = chart(page, "reward-chart")
    assert len(rewards["labels"]) == 10 and all(len(d["data"]) == 10 for d in rewards["datasets"])
    assert chart(page, "loss-chart")["labels"] == [1, 2, 3, 4]
    assert "[0.0250, 0.0750] at 95%" in page and "20240601" in page and "N pairs" in page
    probes = page[page.index("Non-inferiority"):]
    probes = probes[:probes.index("</table>")]  # the gate's non-inferiority table
    assert "one-sided 80% lower bound" in probes and "at or above −0.050" in probes
    assert "general instruction set</th><td>8</td><td>0.5000</td><td>0.4875</td><td>-0.0125" in probes
    assert "unseen templates</th><td>8</td><td>0.5000</td><td>0.5625</td><td>+0.0625" in probes
    assert "retention set</th><td>8</td>" in probes
    assert "0.250 → 0.375" in probes and "[0.0325, 0.0925] at 95%" in probes
    assert "<td>+0.0425</td><td>0.91</td>" in probes  # the lower bound, passes if no loss
    assert "Held-out pass rate</dt><dd>0.250 → 0.500" in page
    assert "non_inferiority" not in page  # shown in its table, not dumped under other fields
    own = get(client, f"/console/adapters/{data.successor}/audit")
    assert "badge-ok\">verified" in own and "This version re-checked" in own
    whole = get(client, f"/console/adapters/{data.successor}/audit?chain=true")
    assert "This version and its 1 ancestor(s)" in whole and data.root in whole

    versions = get(client, "/console/contracts")
    assert versions.count("badge-published") == 2 and "badge-draft" in versions
    assert "user:console-test" in versions
    diff = get(client, "/console/contracts/default/diff?a=1&b=2")
    assert "evaluation.criteria.brevity.weight" in diff and "reweighted" in diff
    draft = get(client, "/console/contracts/default/3")
    assert "Run dry run" in draft and 'id="rubric-title"' in draft
    dry_run = client.get("/console/contracts/default/3/dry-run?last=50", headers={"HX-Request": "true"})
    assert dry_run.status_code == 200 and "Mean delta" in dry_run.text and "Largest movers" in dry_run.text
    assert "Per criterion" in dry_run.text and "Per specialist" in dry_run.text
    assert "Publish check" in dry_run.text
    assert 'id="publish"' not in dry_run.text  # no contracts:write

    compared = get(client, "/console/rewards?compare=contract&a=default@1&b=default@2")
    distribution = chart(compared, "reward-distribution")
    assert [d["label"] for d in distribution["datasets"]] == ["default@1", "default@2"]
    assert all(len(d["data"]) == 10 for d in distribution["datasets"]) and "B − A" in compared
    filtered = get(client, "/console/rewards?specialist=coding&criterion=brevity&since=2000-01-01")
    assert "Distribution of brevity" in filtered
    assert "since: expected" in get(client, "/console/rewards?since=yesterday", 422)
    assert "out of range" in get(client, "/console/rewards?since=9999-12-31T23:59:59-14:00", 422)
    assert "out of range" in get(client, "/console/rewards?until=0001-01-01T00:00:00%2B14:00", 422)

    sessions = get(client, "/console/sessions")
    stream = re.search(r'href="/console/sessions/(session-[^"]+)"', sessions)[1]
    session = get(client, f"/console/sessions/{stream}")
    assert "Turn 1" in session and "Routed to" in session and "Reward records it produced" in session
    assert "Verify the whole chain now" in get(client, "/console/audit")

    client.cookies.clear()
    sign_in(client, data.keys["viewer"])
    assert "lacks the scope &#39;contracts:read&#39;" in get(client, "/console/contracts", 403)
    overview = get(client, "/console")
    assert "/console/specialists" in overview and "/console/rewards" not in overview


def test_an_alias_moves_and_rolls_back_only_with_scope_csrf_and_confirmation(console, container):
    client, data = console
    sign_in(client, data.keys["viewer"])
    viewer_csrf = csrf_of(get(client, "/console/specialists/coding"))
    refused = client.post("/console/specialists/coding/aliases/move", data={
        "csrf": viewer_csrf, "alias": "production", "adapter_id": data.successor, "reason": "x"})
    assert refused.status_code == 403 and "registry:write" in refused.text

    client.cookies.clear()
    sign_in(client, data.keys["admin"])
    page = get(client, "/console/specialists/coding")
    form = {"csrf": csrf_of(page), "alias": "production", "adapter_id": data.successor,
            "reason": "beats its parent on held-out"}
    assert client.post("/console/specialists/coding/aliases/move",
                       data={**form, "csrf": "forged"}).status_code == 403
    assert client.post("/console/specialists/coding/aliases/move", data=form,
                       headers={"Origin": "https://elsewhere.example"}).status_code == 403
    assert client.post("/console/specialists/coding/aliases/move",
                       data={**form, "reason": " "}).status_code == 422
    confirm = client.post("/console/specialists/coding/aliases/move", data=form)
    assert confirm.status_code == 200 and "Confirm" in confirm.text
    assert container.aliases.current("coding")["production"].adapter_id == data.root  # not yet
    done = client.post("/console/specialists/coding/aliases/move", data={
        **form, "confirm": "yes", "expected_current": data.root})
    assert done.status_code == 303
    moved = container.aliases.current("coding")["production"]
    assert (moved.adapter_id, moved.actor, moved.reason) == (data.successor, "key:ops", form["reason"])

    back = {"csrf": form["csrf"], "reason": "regression in production"}
    confirm = client.post("/console/specialists/coding/aliases/production/rollback", data=back)
    assert confirm.status_code == 200 and data.root in confirm.text
    stale = client.post("/console/specialists/coding/aliases/production/rollback", data={
        **back, "confirm": "yes", "expected_current": data.root, "adapter_id": data.root})
    assert stale.status_code == 422 and "changed meanwhile" in stale.text
    done = client.post("/console/specialists/coding/aliases/production/rollback", data={
        **back, "confirm": "yes", "expected_current": data.successor, "adapter_id": data.root})
    assert done.status_code == 303
    assert container.aliases.current("coding")["production"].adapter_id == data.root
    timeline = get(client, "/console/specialists/coding?moved=production")
    assert "badge-rollback" in timeline and "regression in production" in timeline


def test_a_draft_is_published_only_from_its_dry_run(console, container):
    client, data = console
    sign_in(client, data.keys["admin"])
    csrf = csrf_of(get(client, "/console/contracts/default/3"))
    blind = client.post("/console/contracts/default/3/publish", data={
        "csrf": csrf, "confirm": "yes", "proof": "made-up"})
    assert blind.status_code == 409 and container.contracts.get("default", 3).status == "draft"
    shown = get(client, "/console/contracts/default/3/dry-run?last=30&baseline=2")
    proof = PROOF.search(shown)[1]
    unconfirmed = client.post("/console/contracts/default/3/publish", data={"csrf": csrf, "proof": proof})
    assert unconfirmed.status_code == 422
    done = client.post("/console/contracts/default/3/publish", data={
        "csrf": csrf, "confirm": "yes", "proof": proof})
    assert done.status_code == 303 and container.contracts.get("default", 3).status == "published"
    assert container.contracts.get("default", 3).published_by == "key:ops"
    assert "Re-scoring of history" in get(client, done.headers["location"])


def test_the_chain_is_verified_in_the_background_and_polled(console):
    client, data = console
    sign_in(client, data.keys["auditor"])
    csrf = csrf_of(get(client, "/console/audit"))
    started = client.post("/console/audit/chain", data={"csrf": csrf}, headers={"HX-Request": "true"})
    assert started.status_code == 200
    deadline = time.monotonic() + 30
    while "intact" not in (status := client.get("/console/audit/chain").text):
        assert time.monotonic() < deadline, status
        time.sleep(0.2)
    assert "events re-hashed" in status


def test_tenant_keys_are_refused_and_failed_sign_ins_are_throttled(console, container):
    client, _ = console
    tenant_key = container.keys.create(["admin"], "acme-ops", tenant="acme")
    refused = client.post("/console/sign-in", data={"key": tenant_key, "next": "/console"})
    assert refused.status_code == 403 and "operator keys" in refused.text
    assert "set-cookie" not in refused.headers
    answers = [client.post("/console/sign-in", data={"key": f"hcp_nope_{i}", "next": "/console"})
               for i in range(container.settings.auth_failure_burst + 1)]
    assert {a.status_code for a in answers[:-1]} == {401}
    assert answers[-1].status_code == 429 and int(answers[-1].headers["retry-after"]) >= 1
    # A right key still signs in from there (the address may be shared), a wrong one not.
    operator = container.keys.create(["admin"], "ops-behind-the-same-proxy")
    wrong = client.post("/console/sign-in", data={"key": operator + "x", "next": "/console"})
    assert wrong.status_code == 429
    right = client.post("/console/sign-in", data={"key": operator, "next": "/console"},
                        follow_redirects=False)
    assert right.status_code == 303 and "set-cookie" in right.headers
