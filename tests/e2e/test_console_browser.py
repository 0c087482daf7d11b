"""The console as a person uses it: headless Chromium on the demo's data.

A server runs on the data of the demo (real tiny-model training); an auditor, an
evaluation team member and an operator sign in with their keys and look at every page:
the lineage graph has the ancestors, the diff shows the changed criterion, the charts
have the right number of bars, a key without the scope sees no action buttons; an alias
is moved and a draft published through the pages. Every page is checked for the basics
of accessibility and saved as a screenshot (tests/artifacts/console/, or
$HCP_TEST_ARTIFACTS/console/).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from api.app import create_app
from audit.keys import SigningKey
from audit.verify import InclusionBundle, verify_inclusion_bundle
from console.views.members import selected_examples
from hcp import migrate
from tests.e2e.console_browser import ARTIFACTS, chromium, demo_data, require_browser, serve
from tests.unit.trainer_core.fixtures import RecordingDispatcher, fake_train, make_container

pytestmark = [pytest.mark.train, pytest.mark.slow]
SESSIONS = int(os.environ.get("HCP_CONSOLE_TEST_SESSIONS", "120"))
CHECKPOINT_KEY = SigningKey.generate("hcp.console-browser/log")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    require_browser()
    pytest.importorskip("peft")
    from playwright.sync_api import sync_playwright

    data_dir: Path = tmp_path_factory.mktemp("console-demo")
    url = f"sqlite:///{data_dir / 'hcp.sqlite3'}"
    migrate.upgrade(url)
    container = make_container(url, data_dir)
    key_file = data_dir / "checkpoint.key"
    key_file.write_text(CHECKPOINT_KEY.skey() + "\n")
    container.settings = container.settings.model_copy(update={"checkpoint_key_file": key_file})
    data = demo_data(container, SESSIONS)
    with serve(create_app(container)) as base, sync_playwright() as playwright:
        yield {"base": base, "playwright": playwright, "container": container, **data}
    container.close()


def as_role(site, role: str | None):
    return chromium(site["playwright"], site["base"], site["keys"][role] if role else None)


def pages_of(site) -> dict[str, str]:
    adapter, draft = site["successor"], site["draft"]
    return {
        "overview": "/console", "specialists": "/console/specialists",
        "specialist": f"/console/specialists/{adapter.specialist}",
        "adapter": f"/console/adapters/{adapter.adapter_id}",
        "contracts": "/console/contracts", "contract-published": "/console/contracts/default/2",
        "contract-draft": f"/console/contracts/default/{draft}",
        "contract-diff": "/console/contracts/default/diff?a=1&b=2",
        "rewards": "/console/rewards?specialist=" + adapter.specialist,
        "rewards-compare": "/console/rewards?compare=contract&a=default@1&b=default@2",
        "sessions": "/console/sessions", "audit": "/console/audit",
        "sessions-filtered": f"/console/sessions?specialist={adapter.specialist}&outcome=success",
        "adapter-members": f"/console/adapters/{adapter.adapter_id}/members?split=held_out",
        "as-of": "/console/as-of",
    }


def test_every_page_opens_accessible_and_is_saved(site):
    with as_role(site, "admin") as browser:
        for name, path in pages_of(site).items():
            page = browser.open(path)
            assert page.locator("h1").count() == 1, name
            assert "Not allowed" not in page.title() and "Not found" not in page.title(), name
            browser.check_accessibility()
            browser.screenshot(name)
        browser.open(pages_of(site)["adapter"])
        browser.screenshot("adapter-readme", height=1900)  # docs/console-adapter.png is this
        browser.open("/console/sessions")
        browser.page.locator("table a[href^='/console/sessions/']").first.click()
        browser.page.wait_for_load_state("networkidle")
        browser.check_accessibility()
        browser.screenshot("session")
        assert browser.errors == []  # no script error, no CSP violation, no failed load


def test_an_auditor_sees_the_lineage_gate_charts_and_live_audit(site):
    adapter = site["successor"]
    with as_role(site, "auditor") as browser:
        page = browser.open(f"/console/adapters/{adapter.adapter_id}")
        page.wait_for_function("() => window.hcpConsole && window.hcpConsole.graphs['lineage-graph']")
        nodes = page.evaluate("window.hcpConsole.graphs['lineage-graph'].nodes().map(n => n.id())")
        assert adapter.parent_adapter_id in nodes and adapter.adapter_id in nodes
        assert f"base:{adapter.base_model}" in nodes and any(n.startswith("contract:") for n in nodes)
        assert any(n.startswith("manifest:") for n in nodes) and any(n.startswith("run:") for n in nodes)
        bars = page.evaluate("Chart.getChart('reward-chart').data.datasets.map(d => d.data.length)")
        assert bars and set(bars) == {10}
        points = page.evaluate("Chart.getChart('loss-chart').data.datasets[0].data.length")
        assert points == len(adapter.metrics["loss_curve"])
        page.get_by_role("heading", name=re.compile("Gate: successor")).wait_for()
        assert page.locator("text=held-out margin").count() >= 1
        page.locator("#adapter-audit table").wait_for()
        assert "verified" in page.locator("#adapter-audit").inner_text()
        page.get_by_role("button", name="Re-check every ancestor too").click()
        page.locator("#adapter-audit", has_text="ancestor(s) re-checked").wait_for()
        assert adapter.parent_adapter_id in page.locator("#adapter-audit").inner_text()
        assert page.locator("text=Move alias").count() == 0  # no registry:write
        box = page.locator("#lineage-graph")
        box.scroll_into_view_if_needed()  # mouse coordinates are the viewport's
        parent = page.evaluate("window.hcpConsole.graphs['lineage-graph']"
                               ".getElementById('" + adapter.parent_adapter_id + "').renderedPosition()")
        bounds = box.bounding_box()
        page.mouse.click(bounds["x"] + parent["x"], bounds["y"] + parent["y"])  # select the parent
        page.wait_for_url(re.compile(re.escape(adapter.parent_adapter_id.replace("@", "%40")) + "|"
                                     + re.escape(adapter.parent_adapter_id)))
        assert page.locator("h1").inner_text().startswith("Adapter")
        assert browser.errors == []


def test_an_evaluation_team_member_reads_the_diff_and_the_distributions(site):
    with as_role(site, "auditor") as browser:
        page = browser.open("/console/contracts")
        page.select_option("#diff-a-default", "1")
        page.select_option("#diff-b-default", "2")
        page.get_by_role("button", name="Semantic diff").click()
        page.wait_for_load_state("networkidle")
        changed = page.locator("table.diff tr", has_text="brevity")
        assert changed.count() >= 1 and "reweighted" in changed.first.inner_text()
        page = browser.open("/console/rewards?compare=contract&a=default@1&b=default@2")
        bars = page.evaluate("Chart.getChart('reward-distribution').data.datasets.map(d => d.data.length)")
        assert bars == [10, 10]
        assert page.locator("#means th", has_text="B − A").count() == 1
        assert browser.errors == []


def test_a_key_without_the_scope_sees_no_action(site):
    adapter = site["successor"]
    with as_role(site, "viewer") as browser:
        page = browser.open(f"/console/specialists/{adapter.specialist}")
        assert page.get_by_role("button", name=re.compile("Move alias|Roll back")).count() == 0
        assert [a.inner_text() for a in page.locator("nav[aria-label=Main] a").all()] == ["Specialists"]
        page = browser.open(f"/console/contracts/default/{site['draft']}")
        assert "Not allowed" in page.title() and "contracts:read" in page.locator("main").inner_text()
        browser.screenshot("wrong-scope")
    with as_role(site, "auditor") as browser:
        page = browser.open(f"/console/contracts/default/{site['draft']}")
        page.get_by_role("button", name="Run dry run").click()
        page.locator("#dry-run h3").wait_for()
        assert page.locator("#publish").count() == 0  # contracts:read only


def test_an_operator_moves_an_alias_through_the_page_by_keyboard(site):
    adapter, container = site["successor"], site["container"]
    before = container.aliases.current(adapter.specialist).get("production")
    with as_role(site, "admin") as browser:
        page = browser.open(f"/console/specialists/{adapter.specialist}")
        page.fill("#move-alias", "production")
        page.select_option("#move-target", adapter.adapter_id)
        page.fill("#move-reason", "successor beats its parent on held-out")
        button = page.get_by_role("button", name="Move alias…")
        for _ in range(40):  # keyboard only: Tab until the action has the focus
            if page.evaluate("document.activeElement && document.activeElement.textContent.trim()")\
                    == "Move alias…":
                break
            page.keyboard.press("Tab")
        assert button.evaluate("b => b === document.activeElement")
        assert button.evaluate("b => getComputedStyle(b).outlineStyle") != "none"  # focus is visible
        page.keyboard.press("Enter")
        page.wait_for_load_state("networkidle")
        assert page.locator("h1").inner_text().startswith("Confirm")
        browser.check_accessibility()
        browser.screenshot("alias-confirm")
        page.locator("#confirm-move").click()
        page.wait_for_load_state("networkidle")
        assert page.locator("[role=status]").inner_text().startswith("The alias production was moved")
        first = page.locator("table.timeline tbody tr").first.inner_text()
        assert "successor beats its parent" in first and adapter.adapter_id in first
    moved = container.aliases.current(adapter.specialist)["production"]
    assert moved.adapter_id == adapter.adapter_id and moved.actor == "key:ops"
    assert before is None or before.adapter_id != adapter.adapter_id


def test_a_draft_is_published_after_its_dry_run(site):
    container, draft = site["container"], site["draft"]
    with as_role(site, "admin") as browser:
        page = browser.open(f"/console/contracts/default/{draft}")
        page.fill("#dry-last", "100")
        page.get_by_role("button", name="Run dry run").click()
        page.locator("#dry-run #mean-delta").wait_for()
        page.wait_for_function("() => Chart.getChart('dry-run-chart')")  # drawn once htmx settles
        bars = page.evaluate("Chart.getChart('dry-run-chart').data.datasets.map(d => d.data.length)")
        assert bars == [10, 10]
        assert page.locator("#dry-run table", has_text="Largest movers").count() + \
            page.locator("#dry-run h4", has_text="Largest movers").count() >= 1
        browser.screenshot("contract-dry-run")
        page.check("#publish-confirm")
        page.locator("#publish").click()
        page.wait_for_load_state("networkidle")
        assert "Published." in page.locator("[role=status]").inner_text()
        browser.check_accessibility()
        assert browser.errors == []
    assert container.contracts.get("default", draft).status == "published"


def test_the_auditor_verifies_the_chain_from_the_audit_page(site):
    with as_role(site, "auditor") as browser:
        page = browser.open("/console/audit")
        page.locator("#verify-chain").click()
        page.locator("#chain .badge-ok").wait_for(timeout=60_000)
        assert "events re-hashed" in page.locator("#chain").inner_text()
        browser.screenshot("audit-verified")
        assert browser.errors == []


def test_signing_in_keeps_the_key_out_of_urls_and_scripts(site):
    with as_role(site, None) as browser:
        page = browser.open("/console/rewards")
        assert "/console/sign-in?next=" in page.url
        page.fill("#key", site["keys"]["auditor"])
        page.click("button[type=submit]")
        page.wait_for_url(re.compile(r"/console/rewards$"))
        assert site["keys"]["auditor"] not in page.url
        cookie = next(c for c in page.context.cookies() if c["name"] == "hcp_console")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/console"
        assert page.evaluate("document.cookie") == ""  # HttpOnly: scripts cannot read it
        assert ARTIFACTS.exists()


GRAPH = "window.hcpConsole.graphs['lineage-graph']"


def labels_overlapping(page) -> list[tuple[str, str]]:
    boxes = page.evaluate(f"{GRAPH}.nodes().map(n => [n.id(), n.renderedBoundingBox("
                          "{includeLabels: true, includeOverlays: false})])")
    return [(a, b) for i, (a, p) in enumerate(boxes) for b, q in boxes[i + 1:]
            if p["x1"] < q["x2"] and q["x1"] < p["x2"] and p["y1"] < q["y2"] and q["y1"] < p["y2"]]


def edge_labels_on_nodes(page) -> list[tuple[str, str]]:
    """(edge, node) pairs whose boxes meet: an edge's label over a node or the node's label."""
    edges = page.evaluate(f"{GRAPH}.edges().map(e => [e.id(), e.renderedBoundingBox("
                          "{includeNodes: false, includeEdges: false, includeLabels: true, "
                          "includeOverlays: false})])")
    nodes = page.evaluate(f"{GRAPH}.nodes().map(n => [n.id(), n.renderedBoundingBox("
                          "{includeLabels: true, includeOverlays: false})])")
    return [(a, b) for a, p in edges if p["w"] > 0 for b, q in nodes
            if p["x1"] < q["x2"] and q["x1"] < p["x2"] and p["y1"] < q["y2"] and q["y1"] < p["y2"]]


def keyboard_at(page) -> str:
    return str(page.evaluate("window.hcpConsole.keyboard['lineage-graph']"))


def test_the_lineage_graph_reads_at_1360_px_and_works_by_keyboard(site):
    adapter = site["successor"]
    with as_role(site, "auditor") as browser:
        page = browser.open(f"/console/adapters/{adapter.adapter_id}")
        page.wait_for_function(f"() => window.hcpConsole && {GRAPH}")
        assert page.evaluate(f"{GRAPH}.zoom()") * 13 >= 11  # labels 11 px or more on screen
        assert labels_overlapping(page) == []
        assert edge_labels_on_nodes(page) == []  # no edge label clipped by a node

        browser.tab_to("#lineage-graph")
        graph = page.locator("#lineage-graph")
        assert graph.evaluate("g => getComputedStyle(g).outlineStyle") != "none"  # focus is visible
        assert keyboard_at(page) == adapter.adapter_id
        page.keyboard.press("ArrowLeft")
        assert keyboard_at(page) == adapter.parent_adapter_id
        assert adapter.parent_adapter_id in page.locator("#graph-announce").inner_text()
        page.keyboard.press("ArrowUp")  # the parent's training run: Enter shows its hashes
        assert keyboard_at(page).startswith("run:")
        page.keyboard.press("Enter")
        assert "run id" in page.locator("#graph-details").inner_text()
        browser.screenshot("adapter-graph-keyboard")
        page.keyboard.press("Home")
        page.keyboard.press("ArrowLeft")
        page.keyboard.press("Enter")  # opens the parent's page
        page.wait_for_url(re.compile(re.escape(adapter.parent_adapter_id.replace("@", "%40")) + "|"
                                     + re.escape(adapter.parent_adapter_id)))
        assert browser.errors == []


def test_a_long_chain_stays_readable_and_every_node_is_reached_by_keyboard(site):
    chain = [site["successor"].adapter_id]
    # Eight more generations, registered with made-up weights through a container that
    # sends nothing to a worker (the site's own trains for real).
    settings = site["container"].settings  # the same database and artifact store
    made = make_container(settings.database_url, settings.data_dir, RecordingDispatcher())
    for number in range(8):
        firing = made.triggers.fire_manual("coding", "user:demo", f"chain {number}", parent=chain[-1])
        chain.append(fake_train(made, firing.run_id, content=f"chain-{number}".encode()).adapter_id)
    made.close()
    with as_role(site, "auditor") as browser:
        page = browser.open(f"/console/adapters/{chain[-1]}")
        page.wait_for_function(f"() => window.hcpConsole && {GRAPH}")
        assert page.evaluate(f"{GRAPH}.zoom()") >= 0.85  # panned, not shrunk to fit
        assert labels_overlapping(page) == [] and edge_labels_on_nodes(page) == []
        box = page.locator("#lineage-graph").bounding_box()
        rows = page.evaluate(f"{GRAPH}.elements().renderedBoundingBox()")
        assert rows["y1"] >= 0 and rows["y2"] <= box["height"]  # every row in view, top to bottom
        browser.screenshot("adapter-long-chain")
        browser.tab_to("#lineage-graph")
        box = page.locator("#lineage-graph").bounding_box()
        for expected in reversed(chain[-9:-1]):  # leftwards, one generation at a time
            page.keyboard.press("ArrowLeft")
            assert keyboard_at(page) == expected
            shown = page.evaluate(f"{GRAPH}.getElementById('{expected}').renderedPosition()")
            assert 0 <= shown["x"] <= box["width"] and 0 <= shown["y"] <= box["height"]  # kept in view
        browser.screenshot("adapter-long-chain-keyboard")
        assert browser.errors == []


def test_an_auditor_follows_records_sessions_and_time_without_the_cli(site):
    adapter, container = site["successor"], site["container"]
    with as_role(site, "auditor") as browser:
        page = browser.open(f"/console/adapters/{adapter.adapter_id}")
        assert page.locator("#members-table tbody th a").count() >= 1
        page.select_option("#members-split", "held_out")
        page.get_by_role("button", name="Filter members").click()
        splits = "[...document.querySelectorAll('#members-table tbody tr td:nth-child(4)')]"
        page.wait_for_function(f"() => {splits}.every(td => td.textContent === 'held_out')")
        assert page.locator("#members-table tbody th a").count() >= 1
        chosen = selected_examples(container, adapter.training_run_id)  # the runner recorded them
        ordinals = page.locator("#selected-table tbody tr td:first-child").all_inner_texts()
        assert chosen and ordinals == [str(i) for i in range(1, min(50, len(chosen)) + 1)]
        first = page.locator("#selected-table tbody th a").first.get_attribute("href")
        assert first.endswith(f"#reward-{chosen[0]}")
        browser.check_accessibility()
        browser.screenshot("adapter-members")

        link = page.locator("#members-table tbody th a").first
        reward_id = link.get_attribute("href").split("#reward-")[1]
        with page.expect_navigation():
            link.click()
        assert page.locator(f"[id='reward-{reward_id}']").count() == 1  # the member's reward record
        assert page.locator("#session-tenant").inner_text().startswith("none")
        downstream = page.locator("#downstream-manifests").inner_text()
        assert adapter.manifest_id[:12] in downstream and adapter.adapter_id in downstream
        browser.check_accessibility()
        browser.screenshot("session-downstream")

        page = browser.open("/console/sessions")
        page.select_option("#f-specialist", adapter.specialist)
        page.fill("#f-outcome", "failure")
        browser.tab_to("form.filters button[type=submit]")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        specialists = page.locator("tbody tr td:nth-child(4)").all_inner_texts()
        outcomes = page.locator("tbody tr td:nth-child(7)").all_inner_texts()
        assert specialists and set(specialists) == {adapter.specialist} and set(outcomes) == {"failure"}
        browser.screenshot("sessions-filtered-by-keyboard")

        first = container.aliases.history(adapter.specialist, "production", 1000)[-1]
        served = container.serving.history("default", adapter.specialist)[-1]  # v1 began to serve
        between = served.moved_at + (first.moved_at - served.moved_at) / 2  # can be under a second
        page = browser.open("/console/as-of")
        page.fill("#as-of-at", between.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3])
        with page.expect_navigation():
            page.get_by_role("button", name="Show").click()
        row = page.locator("#asof-serves ~ table tr", has_text=adapter.specialist).first.inner_text()
        assert "the bare base model hcp-tiny" in row
        assert "default@1" in page.locator("main").inner_text()
        browser.check_accessibility()
        browser.screenshot("as-of-before-the-first-promotion")
        assert browser.errors == []
    with as_role(site, "viewer") as browser:
        page = browser.open("/console/specialists")
        assert "the bare base model hcp-tiny" in page.locator("tr", has_text="chat").first.inner_text()


def test_an_operator_runs_the_audit_and_takes_a_proof_away(site):
    container = site["container"]
    with as_role(site, "admin") as browser:
        page = browser.open("/console/audit")
        page.locator("#start-audit").click()
        page.locator("#stored-run").wait_for(timeout=180_000)
        assert "audit ok" in page.locator("#audit-job").inner_text()
        with page.expect_navigation():
            page.locator("#stored-run").click()
        assert page.locator("h1").inner_text().endswith("ok")
        assert "key:ops" in page.locator("dl.facts").inner_text()
        browser.check_accessibility()
        browser.screenshot("audit-run")

        page = browser.open("/console/audit")
        with page.expect_navigation():
            page.locator("#sign-checkpoint").click()
        event = container.store.read_all(limit=1)[0]
        page.fill("#proof-event", str(event.event_id))
        with page.expect_download() as info:
            page.get_by_role("button", name="Download the inclusion proof").click()
        bundle = json.loads(Path(info.value.path()).read_text())
        proven = verify_inclusion_bundle(InclusionBundle.from_json(bundle), CHECKPOINT_KEY.verifier())
        assert proven.size >= event.position
        browser.check_accessibility()
        browser.screenshot("audit")
        assert browser.errors == []
