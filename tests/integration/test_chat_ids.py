"""Every id an answer gives is one the API takes back: the completion id is the
`turn.assistant` event's id (`GET /v1/events/chatcmpl-…`), and `POST /v1/feedback` takes
the session as the header carries it or as the log names its stream (`session-<uuid>`,
what `hcp sessions list` and the console show), naming the body's field when it is wrong."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from access.keys import create_key
from api.app import create_app
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.serving_world import CONTRACT, build_world

pytest.importorskip("peft")
pytestmark = [pytest.mark.train]


@pytest.fixture
def world(sqlite_url: str, tmp_path: Path) -> Iterator[tuple[Container, TestClient]]:
    settings = Settings(database_url=sqlite_url, data_dir=tmp_path, models_dir=tmp_path / "models",
                        serving_contract=CONTRACT, kafka_bootstrap="", redis_url="")
    container = Container(settings=settings, engine=make_engine(sqlite_url))
    build_world(container, tmp_path / "models")
    key = create_key(container.engine, ["chat:write", "events:read"], "chat", tenant="acme")
    with TestClient(create_app(container), headers={"Authorization": f"Bearer {key}"}) as client:
        yield container, client
    container.close()


def answer(client: TestClient) -> tuple[str, str]:
    body = {"model": "chat", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 4}
    done = client.post("/v1/chat/completions", json=body)
    assert done.status_code == 200, done.text
    return done.json()["id"], done.headers["x-hcp-session"]


def test_the_completion_id_reads_back_as_the_answers_event(world) -> None:
    _, client = world
    completion_id, session = answer(client)
    event = client.get(f"/v1/events/{completion_id}")
    assert event.status_code == 200, event.text
    assert event.json()["type"] == "turn.assistant" and event.json()["stream_id"] == f"session-{session}"
    assert event.json()["event_id"] == str(uuid.UUID(completion_id.removeprefix("chatcmpl-")))
    bad = client.get("/v1/events/chatcmpl-nothex")
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "event_id"


def test_feedback_takes_the_session_as_the_log_names_it(world) -> None:
    container, client = world
    _, session = answer(client)
    rated = client.post("/v1/feedback", json={"session": f"session-{session}", "rating": 1.0,
                                              "end": {"outcome": "success"}})
    assert rated.status_code == 201, rated.text
    types = [e.type for e in container.store.read_stream(f"session-{session}", 0, 100, "acme")]
    assert types[-2:] == ["feedback.given", "episode.completed"]


@pytest.mark.parametrize("session", [f"session-{uuid.uuid4()}", "not-a-session"])
def test_a_wrong_session_in_feedback_names_the_bodys_field(world, session: str) -> None:
    container, client = world
    head = container.store.head()
    refused = client.post("/v1/feedback", json={"session": session, "rating": 1.0})
    assert refused.status_code == 404, refused.text
    assert refused.json()["error"]["field"] == "session"  # not the X-HCP-Session header
    assert container.store.head() == head
