"""A stock OpenAI client that sends neither X-HCP-Session nor ``user`` resends the whole
conversation: the request that extends a recorded exchange continues its session, in the
key's tenant only; anything else starts one. The ``openai`` package against the API in
process, on the tiny model."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.chat_world import ChatWorld, chat_world

pytest.importorskip("peft")
openai = pytest.importorskip("openai")
pytestmark = [pytest.mark.train]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[ChatWorld]:
    with chat_world(tmp_path_factory.mktemp("stateless"), sqlite_template) as built:
        yield built


def client_of(world: ChatWorld, tenant: str) -> Any:
    key = world.key(tenant)["Authorization"].removeprefix("Bearer ")
    return openai.OpenAI(base_url="http://testserver/v1", api_key=key, http_client=world.client,
                         max_retries=0)


def ask(client: Any, messages: list[dict[str, Any]], **fields: Any) -> tuple[str, str, str]:
    """(answer text, session, how the session was found), as a stock client sees them."""
    answer = client.chat.completions.create(model="chat", messages=messages, max_tokens=6,
                                            temperature=0, **fields)
    return answer.choices[0].message.content or "", answer.hcp["session"], answer.hcp["session_from"]


def stream_ask(client: Any, messages: list[dict[str, Any]]) -> tuple[str, str]:
    raw = client.chat.completions.with_raw_response.create(
        model="chat", messages=messages, max_tokens=6, temperature=0, stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices)
    return text, raw.headers["X-HCP-Session"]


def user_texts(world: ChatWorld, session: str, tenant: str) -> list[str]:
    events = world.container.store.read_stream(f"session-{session}", 0, 100, tenant)
    return [e.payload["text"] for e in events if e.type == "turn.user"]


def test_a_two_turn_chat_of_a_stock_client_is_one_session(world: ChatWorld) -> None:
    client = client_of(world, "acme")
    history = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}]
    first, session, found = ask(client, history)
    assert found == "new"
    history += [{"role": "assistant", "content": first}, {"role": "user", "content": "and then?"}]
    second, again, found = ask(client, history)
    assert (again, found) == (session, "history")
    # Streamed answers are continued the same way (the client joins the deltas).
    history += [{"role": "assistant", "content": second}, {"role": "user", "content": "why?"}]
    third, streamed = stream_ask(client, history)
    assert streamed == session
    history += [{"role": "assistant", "content": third}, {"role": "user", "content": "ok"}]
    assert ask(client, history)[1] == session
    assert user_texts(world, session, "acme") == ["hello", "and then?", "why?", "ok"]


def test_only_a_recorded_answer_in_the_keys_tenant_continues_a_session(world: ChatWorld) -> None:
    acme, globex = client_of(world, "acme"), client_of(world, "globex")
    opening = [{"role": "user", "content": "hello there"}]
    answer, session, _ = ask(acme, opening)
    follow = [*opening, {"role": "assistant", "content": answer}, {"role": "user", "content": "more"}]
    # The same history from another tenant: a session of its own, and nothing of acme's read.
    _, other, found = ask(globex, follow)
    assert found == "new" and other != session
    assert user_texts(world, session, "acme") == ["hello there"]
    # An answer the server never gave: a new conversation.
    forged = [*opening, {"role": "assistant", "content": answer + " (edited)"},
              {"role": "user", "content": "more"}]
    assert ask(acme, forged)[2] == "new"


def test_a_regenerated_answer_and_concurrent_branches_stay_in_the_session(world: ChatWorld) -> None:
    client = client_of(world, "acme")
    opening = [{"role": "user", "content": "tell me a story"}]
    answer, session, _ = ask(client, opening)
    asked = [*opening, {"role": "assistant", "content": answer}, {"role": "user", "content": "shorter"}]
    # A regenerate button resends the same conversation; branches go out at once: each is
    # recorded in the session, whole, one after another.
    with ThreadPoolExecutor(3) as pool:
        found = list(pool.map(lambda text: ask(client, [*asked[:2], {"role": "user", "content": text}]),
                              ["shorter", "shorter", "longer"]))
    assert {s for _, s, _ in found} == {session}
    texts = user_texts(world, session, "acme")
    assert texts[0] == "tell me a story" and sorted(texts[1:]) == ["longer", "shorter", "shorter"]
    events = world.container.store.read_stream(f"session-{session}", 0, 100, "acme")
    kinds = [e.type for e in events if e.type in ("turn.user", "turn.assistant")]
    assert kinds == ["turn.user", "turn.assistant"] * 4  # no exchange split by another
