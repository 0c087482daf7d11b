"""What the console's browser tests stand on: the demo's data, a server in a thread, and
headless Chromium from Debian's packages driven by Playwright (never a browser download).

Chromium is launched from /usr/bin/chromium with a fresh profile and without its
background networking (on a closed network those connections are refused and slow every
start). Without Chromium or the playwright package the tests skip, saying why, unless
HCP_TEST_REQUIRE_SERVICES=1 (CI), where that is a failure.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from tests.ports import free_port

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("HCP_TEST_ARTIFACTS") or ROOT / "tests" / "artifacts") / "console"

# Checked on every page: one h1, no skipped heading level, a name for every form control,
# button and chart, a language. Run through the DevTools protocol, so the page's CSP
# (no eval) does not apply to it.
A11Y_CHECK = """() => {
  const problems = [];
  if (!document.documentElement.lang) problems.push('no lang on <html>');
  const h1 = document.querySelectorAll('h1').length;
  if (h1 !== 1) problems.push(h1 + ' h1 elements');
  let last = 0;
  document.querySelectorAll('h1, h2, h3, h4, h5, h6').forEach(h => {
    const level = Number(h.tagName[1]);
    if (last && level > last + 1)
      problems.push('heading jumps from h' + last + ' to ' + h.outerHTML.slice(0, 60));
    last = level;
  });
  document.querySelectorAll('input:not([type=hidden]), select, textarea').forEach(el => {
    const named = (el.labels && el.labels.length) || el.getAttribute('aria-label')
      || el.getAttribute('aria-labelledby');
    if (!named) problems.push('no label: ' + el.outerHTML.slice(0, 80));
  });
  document.querySelectorAll('button, a[href]').forEach(el => {
    if (!el.textContent.trim() && !el.getAttribute('aria-label'))
      problems.push('no name: ' + el.outerHTML.slice(0, 80));
  });
  document.querySelectorAll('canvas[data-chart], [data-graph]').forEach(el => {
    if (!el.getAttribute('aria-label')) problems.push('figure without a label: ' + el.id);
  });
  return problems;
}"""


def require_browser() -> None:
    """Skip (or, with HCP_TEST_REQUIRE_SERVICES=1, fail) without Chromium or Playwright."""
    missing = []
    if not CHROMIUM.exists():
        missing.append(f"{CHROMIUM} (apt-get install chromium chromium-driver)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the playwright package (pip install -e '.[dev]'; never `playwright install`)")
    if missing:
        message = "browser tests need " + " and ".join(missing)
        if os.environ.get("HCP_TEST_REQUIRE_SERVICES") == "1":
            pytest.fail(message + " (HCP_TEST_REQUIRE_SERVICES=1)")
        pytest.skip(message)


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a thread; yield its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="console-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the test server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def demo_data(container: Any, sessions: int) -> dict[str, Any]:
    """The demo's loop, shortened to two real trainings of ``coding`` (tiny model, CPU).

    As in ``hcp demo``: harness traffic under the example contract, scored; a root
    adapter trained, gated, promoted by hand; the contract reweighted (dry run, publish,
    history re-scored); more traffic served by the root; its successor trained and gated.
    Only ``coding`` is trained, with few steps, so the data is made in well under a minute.
    A further draft waits for its dry run.
    """

    from cli.demo import quiet_libraries

    quiet_libraries()
    contracts = container.contracts
    _tiny_base_model(container)
    document = EXAMPLE_CONTRACT.read_text().replace(
        "[training.triggers.coding]\n", "[training.triggers.coding]\nhyper = { steps = 6 }\n")
    draft = contracts.create_draft("default", document, ACTOR)
    contracts.publish("default", draft.version, ACTOR)
    record_traffic(container, sessions, 1, {})
    score(container)
    root = _train(container, parent="root")
    container.registry.set_status(root, "promoted", ACTOR, "reviewed the gate report; promoting by hand",
                                  alias="production")
    draft = contracts.draft_from("default", 1, ACTOR)
    contracts.edit_draft("default", draft.version, draft.document.replace(
        'id = "brevity"\nweight = 1.0', 'id = "brevity"\nweight = 3.0'), ACTOR)
    contracts.publish("default", draft.version, ACTOR)
    record_traffic(container, sessions, 2, {"coding": root})
    score(container)
    successor = container.registry.adapter(_train(container, parent=root))
    assert successor.metrics["gate"].get("comparison"), "too few sessions for a held-out split"
    waiting = contracts.draft_from("default", draft.version, ACTOR)
    contracts.edit_draft("default", waiting.version, waiting.document.replace(
        'id = "brevity"\nweight = 3.0', 'id = "brevity"\nweight = 0.5'), ACTOR)
    return {
        "successor": successor, "draft": waiting.version,
        "keys": {"admin": container.keys.create(["admin"], "ops"),
                 "auditor": container.keys.create(["registry:read", "contracts:read", "rewards:read",
                                                   "events:read", "audit:read", "lineage:read"], "auditor"),
                 "viewer": container.keys.create(["registry:read"], "viewer")},
    }


ACTOR = "user:demo"
EXAMPLE_CONTRACT = Path(__file__).parents[2] / "examples" / "contracts" / "default.toml"


def _tiny_base_model(container: Any) -> None:
    from trainer.ml.tiny_model import build_tiny_base_model

    if not any(b.name == "hcp-tiny" for b in container.registry.base_models()):
        path = build_tiny_base_model(container.settings.resolved_models_dir / "hcp-tiny", seed=0)
        container.registry.register_base_model("hcp-tiny", path, ACTOR)


def record_traffic(container: Any, sessions: int, seed: int, adapters: dict[str, str]) -> None:
    """Canned sessions (harness.synthetic) through the ingest path."""
    from events.ingest import Author, IngestLimits, ingest
    from harness.synthetic import synthetic_sessions

    limits = IngestLimits(container.settings.max_batch_events, container.settings.max_payload_bytes)
    for session in synthetic_sessions(sessions, seed, adapters):
        ingest(container.store, session, limits, Author("harness:synthetic"), container.references)


def score(container: Any) -> None:
    container.evaluator(group="demo").drain(timeout=600)


def _train(container: Any, parent: str) -> str:
    """Fire ``coding`` from ``parent`` and train it in this process; the new adapter id."""
    firing = container.triggers.fire_manual("coding", "user:demo", "console test", parent=parent)
    container.dispatcher.join()
    run = container.runs.get(firing.run_id)
    assert run.status == "succeeded", run.error
    return str(run.adapter_id)


@dataclass
class Browser:
    """One signed-in Chromium (its own fresh profile) and what its pages logged."""

    base: str
    page: Any
    errors: list[str] = field(default_factory=list)

    def open(self, path: str) -> Any:
        self.page.goto(self.base + path)
        self.page.wait_for_load_state("networkidle")
        return self.page

    def tab_to(self, selector: str, presses: int = 80) -> None:
        """Keyboard only: Tab until the element ``selector`` names has the focus."""
        target = self.page.locator(selector).first
        for _ in range(presses):
            if target.evaluate("el => el === document.activeElement"):
                return
            self.page.keyboard.press("Tab")
        raise AssertionError(f"{selector} never got the keyboard focus")

    def check_accessibility(self) -> None:
        problems = self.page.evaluate(A11Y_CHECK)
        assert problems == [], f"{self.page.url}: {problems}"

    def screenshot(self, name: str, height: int | None = None) -> Path:
        """The whole page, or its top ``height`` pixels."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        clip = {"x": 0, "y": 0, "width": 1360, "height": height} if height else None
        self.page.screenshot(path=str(path), full_page=True, clip=clip)
        return path


@contextmanager
def chromium(playwright: Any, base: str, key: str | None) -> Iterator[Browser]:
    """A fresh Chromium profile, signed in with ``key`` through the sign-in form."""
    with tempfile.TemporaryDirectory(prefix="hcp-chromium-") as profile:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), headless=False, args=CHROMIUM_ARGS,
            viewport={"width": 1360, "height": 900})
        try:
            page = context.pages[0] if context.pages else context.new_page()
            browser = Browser(base, page)
            page.on("console", lambda m: browser.errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: browser.errors.append(str(e)))
            if key is not None:
                browser.open("/console/sign-in")
                page.fill("#key", key)
                page.click("button[type=submit]")
                page.wait_for_url(base + "/console")
            yield browser
        finally:
            context.close()
