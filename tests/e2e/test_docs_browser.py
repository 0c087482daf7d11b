"""The API docs work without internet: headless Chromium opens /docs and /redoc with every
request to another host refused, and finds every operation of the OpenAPI document listed.

Swagger UI and ReDoc come from the package (api/docs_ui.py); before that, /docs loaded
them from a CDN and stayed blank offline.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.app import create_app
from hcp import migrate
from hcp.bootstrap import bootstrap
from hcp.settings import Settings
from tests.e2e.console_browser import CHROMIUM, CHROMIUM_ARGS, require_browser, serve

pytestmark = pytest.mark.slow
# ReDoc 2's sidebar footer always shows Redocly's logo from their CDN (hidden when it
# fails to load); the page's policy refuses it before any request is made.
REDOCLY_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    require_browser()
    from playwright.sync_api import sync_playwright

    data_dir: Path = tmp_path_factory.mktemp("docs")
    url = f"sqlite:///{data_dir / 'hcp.sqlite3'}"
    migrate.upgrade(url)
    container = bootstrap(Settings(database_url=url, data_dir=data_dir))
    app = create_app(container)
    with serve(app) as base, sync_playwright() as playwright, \
            tempfile.TemporaryDirectory(prefix="hcp-chromium-") as profile:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), headless=False, args=CHROMIUM_ARGS,
            viewport={"width": 1360, "height": 900})
        refused: list[str] = []

        def only_local(route: Any) -> None:
            if route.request.url.startswith(base + "/"):
                route.continue_()
            else:
                refused.append(route.request.url)
                route.abort("internetdisconnected")

        context.route("**/*", only_local)
        try:
            yield {"base": base, "context": context, "refused": refused, "spec": app.openapi()}
        finally:
            context.close()
    container.close()


def _operations(spec: dict[str, Any]) -> set[tuple[str, str]]:
    return {(method.upper(), path) for path, item in spec["paths"].items() for method in item}


def _operation_ids(spec: dict[str, Any]) -> set[str]:
    return {op["operationId"] for item in spec["paths"].values() for op in item.values()}


def _open(offline: dict[str, Any], path: str, ready: str) -> tuple[Any, list[str]]:
    page = offline["context"].new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(offline["base"] + path)
    page.wait_for_selector(ready, timeout=60_000)
    page.wait_for_load_state("networkidle")
    return page, errors


def test_swagger_ui_lists_every_operation_offline(offline: dict[str, Any]) -> None:
    page, errors = _open(offline, "/docs", ".opblock")

    listed = {(block.locator(".opblock-summary-method").inner_text().strip(),
               block.locator(".opblock-summary-path").get_attribute("data-path"))
              for block in page.locator(".opblock").all()}
    assert listed == _operations(offline["spec"])
    assert page.locator(".information-container .title").inner_text().startswith("HCP contract")
    assert errors == [] and offline["refused"] == []
    page.close()


def test_redoc_lists_every_operation_offline(offline: dict[str, Any]) -> None:
    page, errors = _open(offline, "/redoc", "[data-section-id^='operation/']")

    # An operation under two tags is shown under each.
    sections = page.eval_on_selector_all("[data-section-id^='operation/']",
                                         "all => all.map(e => e.dataset.sectionId.slice(10))")
    assert set(sections) == _operation_ids(offline["spec"])
    assert page.locator("h1").first.inner_text().startswith("HCP contract")
    assert [e for e in errors if REDOCLY_LOGO not in e] == []
    assert offline["refused"] == []
    page.close()
