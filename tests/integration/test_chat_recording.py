"""An exchange that cannot be recorded is not served: the database refuses the session's
events (a trigger, as a failing disk or a lost primary would) and the client gets a 503,
streamed or not, with nothing in the log; once it takes them again, answers flow."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from access.keys import create_key
from api.app import create_app
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.serving_world import CONTRACT, build_world

pytest.importorskip("peft")
pytestmark = [pytest.mark.train]
REFUSE = ("CREATE TRIGGER refuse_sessions BEFORE INSERT ON events WHEN NEW.stream_id LIKE "
          "'session-%' BEGIN SELECT RAISE(ABORT, 'disk full'); END")


@pytest.fixture
def world(sqlite_url: str, tmp_path: Path) -> Iterator[tuple[Container, TestClient, dict[str, str]]]:
    settings = Settings(database_url=sqlite_url, data_dir=tmp_path, models_dir=tmp_path / "models",
                        serving_contract=CONTRACT, kafka_bootstrap="", redis_url="")
    container = Container(settings=settings, engine=make_engine(sqlite_url))
    build_world(container, tmp_path / "models")
    key = create_key(container.engine, ["chat:write"], "chat", tenant="acme")
    with TestClient(create_app(container)) as client:
        yield container, client, {"Authorization": f"Bearer {key}"}
    container.close()


def test_an_unrecordable_exchange_is_a_503_and_nothing_is_served(world) -> None:
    container, client, auth = world
    head = container.store.head()
    with container.engine.begin() as conn:
        conn.execute(text(REFUSE))
    body = {"model": "chat", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 4}
    refused = client.post("/v1/chat/completions", headers=auth, json=body)
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "recording_failed"
    assert "disk full" not in refused.text  # the database's own text stays in the log
    assert "choices" not in refused.json()
    streamed = client.post("/v1/chat/completions", headers=auth, json={**body, "stream": True})
    assert streamed.status_code == 503 and "data:" not in streamed.text
    assert container.store.head() == head  # nothing recorded, nothing half-recorded
    with container.engine.begin() as conn:
        conn.execute(text("DROP TRIGGER refuse_sessions"))
    served = client.post("/v1/chat/completions", headers=auth, json=body)
    assert served.status_code == 200 and served.json()["choices"][0]["message"]["content"] is not None
    assert container.store.head() == head + 5  # the session's 4 and the conversation's head
