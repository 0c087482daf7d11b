"""Pages of GET /v1/events and /v1/streams/{id} are bounded by bytes as well as by events, on
SQLite and PostgreSQL: a client following ``next_after`` gets every event once, in order,
in pages no larger than HCP_MAX_PAGE_BYTES (or of one event, when that one is larger), and
the server never holds a whole ``limit`` of large events to build one."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from access.keys import create_key
from api.app import create_app
from api.schemas.events import EventPage
from events.model import NewEvent
from hcp.bootstrap import Container, bootstrap
from hcp.settings import Settings

KIB = 1024
PAGE_BYTES = 300 * KIB


@pytest.fixture
def api(database_url: str, tmp_path: Path) -> Iterator[tuple[TestClient, Container]]:
    container = bootstrap(Settings(database_url=database_url, data_dir=tmp_path, max_page_bytes=PAGE_BYTES))
    key = create_key(container.engine, ["events:read"])
    with TestClient(create_app(container), headers={"Authorization": f"Bearer {key}"}) as client:
        yield client, container
    container.close()


def append(container: Container, stream: str, sizes_kib: list[int]) -> list[int]:
    """Events of about the given payload sizes; their positions."""
    batch = [NewEvent(stream_id=stream, type="x.big", payload={"i": i, "text": "x" * (size * KIB)})
             for i, size in enumerate(sizes_kib)]
    return [a.event.position for a in container.store.append(batch)]


def follow(client: TestClient, url: str, start: int) -> tuple[list[dict[str, Any]], list[int]]:
    """Every page from ``start`` on: the events, and each page's size in bytes."""
    events, sizes, after = [], [], start
    while True:
        page = client.get(url.format(after=after))
        assert page.status_code == 200, page.text
        body = page.json()
        EventPage.model_validate(body)  # the body the OpenAPI documents
        if not body["events"]:
            return events, sizes
        events += body["events"]
        sizes.append(len(page.content))
        after = body["next_after"]


@pytest.mark.parametrize("route", ["/v1/events?after={after}&limit=5000",
                                   "/v1/streams/big?after_seq={after}&limit=5000"])
def test_a_page_stops_at_the_byte_bound_and_the_next_one_goes_on_from_there(
        api: tuple[TestClient, Container], route: str) -> None:
    client, container = api
    first = container.store.head()
    positions = append(container, "big", [100, 100, 100, 400, 20, 20, 20, 100])
    start = first if route.startswith("/v1/events") else 0

    events, sizes = follow(client, route, start)

    assert [e["position"] for e in events] == positions  # each once, in order
    assert [e["payload"]["i"] for e in events] == list(range(8))
    # 100+100 KiB fit in 300 KiB, a third does not (with the rest of each event); the
    # 400 KiB event alone exceeds the bound and is a page of its own; 20+20+20+100 fit.
    assert len(sizes) == 4
    assert all(size <= PAGE_BYTES for i, size in enumerate(sizes) if i != 2), sizes
    assert sizes[2] > PAGE_BYTES  # the one event larger than a page


def test_next_after_and_head_say_where_a_short_page_stopped(api: tuple[TestClient, Container]) -> None:
    client, container = api
    first = container.store.head()
    positions = append(container, "big", [200, 200, 1])

    page = client.get(f"/v1/events?after={first}&limit=3").json()

    assert [e["position"] for e in page["events"]] == positions[:1]
    assert page["next_after"] == positions[0] and page["head"] == positions[-1]


def test_a_page_of_large_events_does_not_hold_them_all(api: tuple[TestClient, Container]) -> None:
    client, container = api
    first = container.store.head()
    for _ in range(6):  # 120 events of 256 KiB: 30 MiB behind one request for limit=5000
        append(container, "big", [256] * 20)

    peak = peak_traced_bytes(lambda: client.get(f"/v1/events?after={first}&limit=5000"))

    # A scan holds a page (300 KiB here) and the rows of one fetch (32 of 256 KiB); reading
    # the whole limit first held all 30 MiB, and their copies.
    assert peak < 16 * 1024 * KIB, f"{peak / 2**20:.1f} MiB"


def peak_traced_bytes(action: Any) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        response = action()
        assert response.status_code == 200 and response.json()["events"]
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
