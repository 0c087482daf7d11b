"""The gate before the body: unknown clients are refused unread, bodies are capped, failed
authentications are throttled per address and per key id (a right key always passes).
SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from access.keys import create_key
from api.app import create_app
from hcp.bootstrap import Container, bootstrap
from hcp.settings import Settings

MB = 1 << 20


@dataclass
class Raw:
    """One request sent straight to the ASGI app, counting the body chunks it read."""

    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunks_read: int = 0


def call(app: FastAPI, path: str, headers: dict[str, str], chunks: list[bytes],
         client: tuple[str, int] = ("10.0.0.1", 1000)) -> Raw:
    raw = Raw()

    async def receive() -> dict[str, Any]:
        if raw.chunks_read < len(chunks):
            raw.chunks_read += 1
            return {"type": "http.request", "body": chunks[raw.chunks_read - 1],
                    "more_body": raw.chunks_read < len(chunks)}
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            raw.status = message["status"]
            raw.headers = {k.decode(): v.decode() for k, v in message["headers"]}
        elif message["type"] == "http.response.body":
            raw.body += message.get("body", b"")

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
             "root_path": "", "client": client, "server": ("testserver", 80),
             "headers": [(k.lower().encode(), v.encode()) for k, v in
                         {"content-type": "application/json", **headers}.items()]}
    anyio.run(app, scope, receive, send)
    return raw


def client_events(container: Container) -> int:
    """Events the requests stored (creating the test's key wrote an api_key.created event)."""
    return sum(1 for e in container.store.iter_all(raw=True) if not e.stream_id.startswith("api_key:"))


@pytest.fixture
def gated(database_url: str, tmp_path: Path) -> Iterator[tuple[FastAPI, Container, str]]:
    settings = Settings(database_url=database_url, data_dir=tmp_path, max_body_bytes=2 * MB,
                        auth_failure_burst=3, auth_failure_per_second=0.01)
    container = bootstrap(settings)
    key = create_key(container.engine, ["admin"])
    yield create_app(container), container, key
    container.close()


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.mark.parametrize("headers", [{}, bearer("hcp_0123456789abcdef_wrong"), {"Authorization": "Basic x"}])
def test_a_request_without_a_known_key_is_refused_before_its_body_is_read(
        gated: tuple[FastAPI, Container, str], headers: dict[str, str]) -> None:
    app, container, _ = gated
    raw = call(app, "/v1/events", headers, [b"{" * MB] * 39)

    assert (raw.status, raw.chunks_read) == (401, 0)
    assert raw.headers["www-authenticate"] == "Bearer"
    assert client_events(container) == 0


def test_a_declared_length_over_the_cap_is_413_unread(gated: tuple[FastAPI, Container, str]) -> None:
    app, _, key = gated
    raw = call(app, "/v1/events", {**bearer(key), "content-length": str(3 * MB)}, [b" " * MB] * 3)

    assert (raw.status, raw.chunks_read) == (413, 0)
    assert b'"field":"body"' in raw.body


def test_a_streamed_body_over_the_cap_is_413_read_no_further(gated: tuple[FastAPI, Container, str]) -> None:
    app, container, key = gated
    raw = call(app, "/v1/events", bearer(key), [b" " * MB] * 10)

    assert (raw.status, raw.chunks_read) == (413, 3)  # 3 MB crossed the 2 MB cap: stop there
    assert b"body_too_large" in raw.body
    assert client_events(container) == 0


def test_a_body_under_the_cap_goes_through(gated: tuple[FastAPI, Container, str]) -> None:
    app, container, key = gated
    body = b'{"events": [{"stream_id": "s", "type": "x.t", "payload": {"k": 1}}]}'
    raw = call(app, "/v1/events", bearer(key), [body[:10], body[10:]])

    assert raw.status == 201, raw.body
    assert client_events(container) == 1


def test_failed_authentications_are_throttled_per_address(gated: tuple[FastAPI, Container, str]) -> None:
    app, _, key = gated
    client = TestClient(app, client=("10.0.0.7", 1))
    statuses = [client.get("/v1/events", headers=bearer(f"hcp_{i:016x}_guess")).status_code
                for i in range(5)]

    assert statuses == [401, 401, 401, 429, 429]
    refused = client.get("/v1/events", headers=bearer(key + "x"))  # an issued id, wrong secret
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
    assert refused.json()["error"]["code"] == "too_many_failed_authentications"
    # A right key passes even from there (a proxy or NAT shares the address).
    assert client.get("/v1/events", headers=bearer(key)).status_code == 200
    elsewhere = TestClient(app, client=("10.0.0.8", 1))
    assert elsewhere.get("/v1/events", headers=bearer(key)).status_code == 200


def test_failed_authentications_are_throttled_per_key_id(gated: tuple[FastAPI, Container, str]) -> None:
    app, _, key = gated
    key_id = key.split("_")[1]
    statuses = [TestClient(app, client=(f"10.0.1.{i}", 1)).get(
        "/v1/events", headers=bearer(f"hcp_{key_id}_guess{i}")).status_code for i in range(4)]

    assert statuses == [401, 401, 401, 429]
    other = create_key(gated[1].engine, ["events:read"])
    fresh = TestClient(app, client=("10.0.1.99", 1))
    assert fresh.get("/v1/events", headers=bearer(other)).status_code == 200


def test_missing_keys_are_not_charged_and_unsecured_routes_need_none(
        gated: tuple[FastAPI, Container, str]) -> None:
    app, _, key = gated
    client = TestClient(app, client=("10.0.0.9", 1))
    assert [client.get("/v1/events").status_code for _ in range(5)] == [401] * 5
    assert client.get("/v1/events", headers=bearer(key)).status_code == 200
    assert client.get("/healthz").status_code == 200
    assert client.get("/openapi.json").status_code == 200
