"""OpenAI fields a stock client relies on are honoured or refused, never ignored: the
``openai`` package against the API in process, on the tiny model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.chat_world import ChatWorld, chat_world

pytest.importorskip("peft")
openai = pytest.importorskip("openai")
pytestmark = [pytest.mark.train]
HELLO = [{"role": "user", "content": "hello"}]
WEATHER = {"type": "function", "function": {"name": "weather", "description": "the weather",
                                            "parameters": {"type": "object", "properties": {}}}}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[ChatWorld]:
    with chat_world(tmp_path_factory.mktemp("openai"), sqlite_template) as built:
        yield built


@pytest.fixture(scope="module")
def client(world: ChatWorld) -> Any:
    key = world.key("acme")["Authorization"].removeprefix("Bearer ")
    return openai.OpenAI(base_url="http://testserver/v1", api_key=key, http_client=world.client,
                         max_retries=0)


def refused(client: Any, **fields: Any) -> Any:
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="chat", messages=fields.pop("messages", HELLO), **fields)
    assert caught.value.status_code == 400
    return caught.value.body  # the error object: OpenAI's message, type, param, code


def test_max_tokens_above_the_contracts_cap_is_a_400_naming_the_cap(client: Any) -> None:
    error = refused(client, max_tokens=1_000_000)
    assert error["param"] == "max_tokens" and error["type"] == "invalid_request_error"
    assert "limit of 64 tokens" in error["message"] and "serve@1" in error["message"]
    assert refused(client, max_completion_tokens=65)["param"] == "max_completion_tokens"
    answer = client.chat.completions.create(model="chat", messages=HELLO, max_tokens=64)
    assert answer.usage.completion_tokens <= 64


def test_invalid_requests_are_400s_in_openais_shape(client: Any) -> None:
    assert refused(client, messages=[])["param"] == "messages"
    assert refused(client, temperature=7)["param"] == "temperature"
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(model="nobody", messages=HELLO)
    assert caught.value.body["param"] == "model" and caught.value.body["code"] == "model_not_found"


def test_a_tool_choice_with_nothing_to_choose_is_refused_naming_the_field(client: Any) -> None:
    # What the decoder enforces (response_format, forced calls, logprobs) is
    # tests/integration/test_openai_decoding.py.
    named = {"type": "function", "function": {"name": "elsewhere"}}
    assert refused(client, tools=[WEATHER], tool_choice=named)["param"] == "tool_choice.function.name"
    assert refused(client, tool_choice="required")["param"] == "tool_choice"  # no tools to choose
    answer = client.chat.completions.create(model="chat", messages=HELLO, tools=[WEATHER],
                                            tool_choice="none", max_tokens=4)
    assert answer.choices[0].message.tool_calls is None


def test_a_model_is_retrieved_by_id(client: Any, world: ChatWorld) -> None:
    listed = {m.id for m in client.models.list()}
    assert {"auto", "chat", "coding"} <= listed
    chat = client.models.retrieve("chat")
    assert chat.id == "chat" and chat.owned_by == "hcp"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("chat@99")
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("Not A Model")


def test_a_base_served_turn_records_the_base_weights_digest(client: Any, world: ChatWorld) -> None:
    raw = client.chat.completions.with_raw_response.create(model="chat", messages=HELLO, max_tokens=4)
    weights = world.container.registry.base_model("tiny").weights_sha256
    assert raw.headers["X-HCP-Served-Base"] == "true" and raw.headers["X-HCP-Base-Digest"] == weights
    events = world.container.store.read_stream(f"session-{raw.headers['X-HCP-Session']}", 0, 100, "acme")
    routed = next(e for e in events if e.type == "route.decided")
    answered = next(e for e in events if e.type == "turn.assistant")
    assert routed.payload["adapter_digest"] is None and routed.payload["base_weights_sha256"] == weights
    assert answered.payload["base_weights_sha256"] == weights
    assert raw.parse().hcp["base_weights_sha256"] == weights  # type: ignore[attr-defined]
