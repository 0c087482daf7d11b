"""Feedback on an answer whose episode has ended (the session went idle and expired) is a
409 naming why, and nothing is stored; the session's next answer opens the next episode,
which can be rated and ended. The API in process, on the tiny model, under a serving
contract whose sessions end after a second idle."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chat_world import ChatWorld, chat_world
from tests.serving_world import CONTRACT, DOCUMENT

pytest.importorskip("peft")
pytestmark = [pytest.mark.train]
IDLE = DOCUMENT + '\n[harness.sessions]\nidle_timeout = "1s"\n'


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[ChatWorld]:
    with chat_world(tmp_path_factory.mktemp("expired"), sqlite_template) as built:
        c = built.container
        draft = c.contracts.create_draft(CONTRACT, IDLE, "tester", parent_version=1)
        c.contracts.publish(CONTRACT, draft.version, "tester")
        c.serving.move(CONTRACT, None, draft.version, "tester", "sessions end after 1 s idle")
        yield built


def expire(world: ChatWorld) -> int:
    time.sleep(1.2)
    return world.container.session_expiry().sweep().expired


def test_feedback_on_an_expired_episode_is_a_409_and_stores_nothing(world: ChatWorld) -> None:
    auth = world.key("acme")
    answered = world.chat(auth, "hello")
    session = answered.headers["X-HCP-Session"]
    assert expire(world) >= 1
    head = world.container.store.head()
    for body in ({"end": {"outcome": "success"}}, {"rating": 1.0},
                 {"completion_id": answered.json()["id"], "thumbs": "up"}):
        late = world.client.post("/v1/feedback", headers=auth, json={"session": session, **body})
        assert late.status_code == 409, late.text
        error = late.json()["error"]
        assert error["code"] == "episode_ended" and "session.expired" in error["message"]
        assert "idle" in error["message"]
    assert world.container.store.head() == head
    # The session goes on: its next answer opens the next episode, which can be ended.
    again = world.client.post("/v1/chat/completions", headers={**auth, "X-HCP-Session": session},
                              json={"model": "chat", "max_tokens": 4,
                                    "messages": [{"role": "user", "content": "are you there?"}]})
    assert again.status_code == 200
    ended = world.client.post("/v1/feedback", headers=auth, json={
        "session": session, "rating": 1.0, "end": {"outcome": "success"}})
    assert ended.status_code == 201, ended.text
    types = [e.type for e in world.container.store.read_stream(f"session-{session}", 0, 100, "acme")]
    assert types == ["session.started", "turn.user", "route.decided", "turn.assistant",
                     "session.expired", "session.started", "turn.user", "route.decided",
                     "turn.assistant", "feedback.given", "episode.completed"]


def test_an_ended_episode_takes_no_second_end(world: ChatWorld) -> None:
    auth = world.key("acme")
    session = world.chat(auth, "hello").headers["X-HCP-Session"]
    body = {"session": session, "end": {"outcome": "failure"}}
    assert world.client.post("/v1/feedback", headers=auth, json=body).status_code == 201
    twice = world.client.post("/v1/feedback", headers=auth, json=body)
    assert twice.status_code == 409 and "episode.completed" in twice.json()["error"]["message"]
