"""POST /v1/events answers the same whether its short way (api/append_route.py) takes a
request or FastAPI's handler does: every status and error body alike, what is stored
alike. SQLite and PostgreSQL."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import api.append_route
from access.keys import create_key
from api.app import create_app
from hcp.bootstrap import Container, bootstrap
from hcp.settings import Settings

JSON = {"Content-Type": "application/json"}


@pytest.fixture
def served(database_url: str, tmp_path: Path) -> Iterator[tuple[TestClient, Container]]:
    container = bootstrap(Settings(database_url=database_url, data_dir=tmp_path, max_batch_events=5))
    key = create_key(container.engine, ["events:write"])
    client = TestClient(create_app(container), headers={"Authorization": f"Bearer {key}"})
    with client:
        yield client, container
    container.close()


def event(**fields: Any) -> dict[str, Any]:
    return {"stream_id": f"s-{uuid.uuid4().hex[:8]}", "type": "x.test", "payload": {"n": 1},
            "event_id": str(uuid.uuid4()), "metadata": {"actor": "u", "specialist": "coding"}, **fields}


def raw(text: str) -> Callable[[], bytes]:
    return lambda: text.encode()


def events(*items: Callable[[], dict[str, Any]]) -> Callable[[], bytes]:
    return lambda: json.dumps({"events": [make() for make in items]}).encode()


BODIES: dict[str, Callable[[], bytes]] = {
    "plain": events(event, event),
    "hyphenless id (the model's way)": events(lambda: event(event_id=uuid.uuid4().hex)),
    "numeric string seq (the model's way)": events(lambda: event(expected_seq="0")),
    "unknown field": events(lambda: event(colour="red")),
    "missing type": events(lambda: {k: v for k, v in event().items() if k != "type"}),
    "too many": events(*[event] * 6),
    "empty batch": events(),
    "events not a list": raw('{"events": {}}'),
    "duplicate key": raw('{"events": [{"stream_id": "s", "type": "x.t", "payload": {"a": 1, "a": 2}}]}'),
    "NaN": raw('{"events": [{"stream_id": "s", "type": "x.t", "payload": {"a": NaN}}]}'),
    "NUL": raw('{"events": [{"stream_id": "s", "type": "x.t", "payload": {"a": "\\u0000"}}]}'),
    "lone surrogate": raw('{"events": [{"stream_id": "s", "type": "x.t", "payload": {"a": "\\ud800"}}]}'),
    "huge int": raw('{"events": [{"stream_id": "s", "type": "x.t", "payload": {"a": 1' + "0" * 30 + "}}]}"),
    "broken": raw('{"events": ['),
    "not UTF-8": lambda: b'{"events": [{"stream_id": "\xff", "type": "x.t", "payload": {}}]}',
    "empty": raw(""),
    "reserved stream": events(lambda: event(stream_id="api_key:x")),
}


def answer(response: Any) -> tuple[int, Any]:
    body = response.json()
    if response.status_code < 300:  # positions and hashes differ: compare the shape
        body = [sorted(e) for e in body["events"]]
    return response.status_code, body


@pytest.mark.parametrize("name", list(BODIES))
@pytest.mark.parametrize("headers", [JSON, {"Content-Type": "text/plain"}, {}])
def test_the_short_way_answers_as_fastapi_does(served: tuple[TestClient, Container], name: str,
                                               headers: dict[str, str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    client, container = served
    before = container.store.head()
    short = answer(client.post("/v1/events", content=BODIES[name](), headers=headers))
    if short[0] >= 400:
        assert container.store.head() == before  # the short way's refusal stored nothing

    async def declined(*_: Any) -> None:
        return None

    monkeypatch.setattr(api.append_route, "_fast", declined)
    fastapis = answer(client.post("/v1/events", content=BODIES[name](), headers=headers))

    assert short == fastapis


def test_a_key_without_the_scope_is_refused_before_anything_is_stored(
        served: tuple[TestClient, Container]) -> None:
    client, container = served
    key = create_key(container.engine, ["events:read"])
    head = container.store.head()

    response = client.post("/v1/events", content=BODIES["plain"](),
                           headers={**JSON, "Authorization": f"Bearer {key}"})

    assert response.status_code == 403
    assert container.store.head() == head


def test_a_plain_batch_takes_the_short_way_and_is_stored(served: tuple[TestClient, Container],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    client, container = served
    taken: list[bytes] = []
    append = api.append_route._append

    def counted(raw: bytes, *rest: Any) -> Any:
        taken.append(raw)
        return append(raw, *rest)

    monkeypatch.setattr(api.append_route, "_append", counted)
    body = BODIES["plain"]()

    response = client.post("/v1/events", content=body, headers=JSON)

    assert response.status_code == 201 and taken == [body]
    sent = json.loads(body)["events"]
    stored = [container.store.get(uuid.UUID(e["event_id"])) for e in sent]
    assert [(s.stream_id, s.payload) for s in stored if s] == [(e["stream_id"], e["payload"]) for e in sent]


def test_the_answer_is_compact_json_with_text_as_sent(served: tuple[TestClient, Container]) -> None:
    # The bytes json.dumps(separators=(",", ":"), ensure_ascii=False) wrote, encoded: a
    # stream id's non-ASCII and control characters included.
    client, _ = served
    odd = ["s-é-\u2028-😀", "s-tab\t-quote\"-back\\-nl\n-\x01"]
    body = json.dumps({"events": [event(stream_id=name) for name in odd]}).encode()

    response = client.post("/v1/events", content=body, headers=JSON)

    assert response.status_code == 201
    answer = response.json()
    assert [e["stream_id"] for e in answer["events"]] == odd
    assert response.content == json.dumps(answer, separators=(",", ":"), ensure_ascii=False).encode()
