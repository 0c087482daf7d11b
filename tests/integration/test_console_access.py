"""Console sessions end with their key and at sign-out, in every API process, on SQLite and
PostgreSQL; and a console page shows event content only to keys that may read it.

Two apps over one database stand for two API processes: each has its own key cache
(``HCP_KEY_CACHE_SECONDS``), both the same console secret, so a cookie from one is good
at the other until the server ends it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.unit.evaluators.factories import contract_text, publish
from tests.unit.trainer_core.fixtures import RecordingDispatcher

CACHE_S = 0.5
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
SIGN_IN = "/console/sign-in"


def container_on(url: str, data_dir: Path) -> Container:
    settings = Settings(database_url=url, kafka_bootstrap="", redis_url="", data_dir=data_dir,
                        key_cache_seconds=CACHE_S, console_secret="a shared console secret")
    return Container(settings, make_engine(url), dispatch_to=RecordingDispatcher())


@pytest.fixture
def apps(database_url: str, tmp_path: Path) -> Iterator[tuple[Container, Container]]:
    one, two = container_on(database_url, tmp_path), container_on(database_url, tmp_path)
    yield one, two
    one.close()
    two.close()


def client_of(container: Container, cookie: str | None = None) -> TestClient:
    client = TestClient(create_app(container), follow_redirects=False)
    if cookie is not None:
        client.cookies.set("hcp_console", cookie, path="/console")
    return client


def signed_in(container: Container, key: str) -> tuple[TestClient, str]:
    client = client_of(container)
    answer = client.post(SIGN_IN, data={"key": key, "next": "/console"})
    assert answer.status_code == 303, answer.text
    return client, answer.cookies["hcp_console"]


def refused(client: TestClient) -> bool:
    """The console answers as to someone signed out: the sign-in page (htmx: 401)."""
    page = client.get("/console")
    fragment = client.get("/console/specialists", headers={"HX-Request": "true"})
    return (page.status_code == 303 and page.headers["location"].startswith(SIGN_IN)
            and fragment.status_code == 401 and fragment.headers["HX-Redirect"].startswith(SIGN_IN))


def within_the_cache_time(check: TestClient) -> bool:
    deadline = time.monotonic() + CACHE_S + 2.0
    while time.monotonic() < deadline:
        if refused(check):
            return True
        time.sleep(0.1)
    return False


def test_a_revoked_keys_session_ends_in_every_process(apps: tuple[Container, Container]) -> None:
    one, two = apps
    key = one.keys.create(["admin"], label="ops")
    here, cookie = signed_in(one, key)
    there = client_of(two, cookie)
    assert here.get("/console").status_code == 200 and there.get("/console").status_code == 200

    two.keys.revoke(key.split("_")[1], actor="cli:bob", reason="rotated")
    assert refused(there)  # the process that revoked: at once
    assert within_the_cache_time(here)  # the other one: within HCP_KEY_CACHE_SECONDS


def test_sign_out_ends_the_session_on_the_server(apps: tuple[Container, Container]) -> None:
    one, two = apps
    key = one.keys.create(["admin"], label="ops")
    browser, cookie = signed_in(one, key)
    copied_here, copied_there = client_of(one, cookie), client_of(two, cookie)
    assert copied_there.get("/console").status_code == 200
    csrf = CSRF.search(browser.get("/console").text)
    assert csrf is not None

    out = browser.post("/console/sign-out", data={"csrf": csrf[1]})
    assert out.status_code == 303 and out.headers["location"] == SIGN_IN
    assert refused(copied_here)
    assert within_the_cache_time(copied_there)
    again, _ = signed_in(two, key)  # signing in again starts a new session
    assert again.get("/console").status_code == 200
    assert refused(client_of(two, cookie))


def test_a_console_dry_run_needs_events_read(apps: tuple[Container, Container]) -> None:
    one, _ = apps
    publish(one.contracts, contract_text())
    draft = one.contracts.create_draft("default", contract_text(answered_weight=2.0), "t", 1)
    url = f"/console/contracts/default/{draft.version}/dry-run?last=10"
    author, _ = signed_in(one, one.keys.create(["contracts:read", "contracts:write"], "author"))
    reader, _ = signed_in(one, one.keys.create(["contracts:read", "events:read"], "reader"))

    assert author.get(url).status_code == 403
    assert reader.get(url).status_code == 200
