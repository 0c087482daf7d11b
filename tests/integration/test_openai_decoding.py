"""OpenAI fields that need the decoder: ``response_format`` (json_object, json_schema) and a
forced ``tool_choice`` by constrained decoding, ``logprobs``/``top_logprobs`` from the
engine, and LangChain's ``with_structured_output`` in its default mode. The ``openai`` and
``langchain-openai`` packages against the API in process, on the tiny model: a random
model that, left alone, writes no JSON and calls no tool."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import jsonschema
import pytest
from pydantic import BaseModel, Field

from tests.chat_world import ChatWorld, chat_world

pytest.importorskip("peft")
openai = pytest.importorskip("openai")
pytestmark = [pytest.mark.train]
HELLO = [{"role": "user", "content": "hello"}]
FORECAST = {"type": "object", "properties": {
    "city": {"enum": ["Oslo", "Bergen", "Tromsø"]},
    "celsius": {"type": "integer", "minimum": -40, "maximum": 40},
    "windy": {"type": "boolean"}},
    "required": ["city", "celsius", "windy"], "additionalProperties": False}
WEATHER = {"type": "function", "function": {"name": "weather", "description": "the weather",
                                            "parameters": {"type": "object", "properties": {
                                                "city": {"enum": ["Oslo", "Bergen"]}},
                                                "required": ["city"], "additionalProperties": False}}}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[ChatWorld]:
    with chat_world(tmp_path_factory.mktemp("decoding"), sqlite_template) as built:
        yield built


@pytest.fixture(scope="module")
def client(world: ChatWorld) -> Any:
    key = world.key("acme")["Authorization"].removeprefix("Bearer ")
    return openai.OpenAI(base_url="http://testserver/v1", api_key=key, http_client=world.client,
                         max_retries=0)


def ask(client: Any, **fields: Any) -> Any:
    return client.chat.completions.create(model="chat", messages=fields.pop("messages", HELLO),
                                          **fields)


def test_a_json_schema_answer_is_valid_under_its_schema(client: Any, world: ChatWorld) -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "forecast", "schema": FORECAST, "strict": True}}
    for seed in range(3):
        answer = ask(client, response_format=fmt, temperature=1.0, seed=seed)
        jsonschema.validate(json.loads(answer.choices[0].message.content), FORECAST)
        assert answer.choices[0].finish_reason == "stop"
    streamed = ask(client, response_format=fmt, stream=True)
    jsonschema.validate(json.loads("".join(c.choices[0].delta.content or "" for c in streamed
                                           if c.choices)), FORECAST)
    said = world.container.store.get(uuid.UUID(answer.id.removeprefix("chatcmpl-")), "acme")
    assert said is not None and said.payload["constrained"] == "json_schema"


def test_a_json_object_answer_is_a_json_object(client: Any) -> None:
    answer = ask(client, response_format={"type": "json_object"}, max_tokens=64)
    text = answer.choices[0].message.content
    assert text.startswith("{")
    if answer.choices[0].finish_reason == "stop":
        assert isinstance(json.loads(text), dict)


def test_a_forced_tool_choice_calls_the_tool(client: Any) -> None:
    for choice in ("required", {"type": "function", "function": {"name": "weather"}}):
        answer = ask(client, tools=[WEATHER], tool_choice=choice)
        [call] = answer.choices[0].message.tool_calls
        assert answer.choices[0].finish_reason == "tool_calls"
        assert call.function.name == "weather"
        assert json.loads(call.function.arguments)["city"] in ("Oslo", "Bergen")


def test_logprobs_name_each_token_and_its_likeliest(client: Any) -> None:
    answer = ask(client, logprobs=True, top_logprobs=3, max_tokens=8, temperature=0)
    tokens = answer.choices[0].logprobs.content
    assert 0 < len(tokens) <= 8
    assert b"".join(bytes(t.bytes) for t in tokens).decode("utf-8", "replace") == \
        answer.choices[0].message.content
    for t in tokens:
        assert t.logprob <= 0 and len(t.top_logprobs) == 3
        assert t.top_logprobs[0].logprob >= t.top_logprobs[-1].logprob
        assert t.top_logprobs[0].token == t.token and t.top_logprobs[0].logprob == t.logprob  # greedy
    assert ask(client, max_tokens=4).choices[0].logprobs is None


def test_what_the_decoder_cannot_enforce_is_a_400_naming_it(client: Any) -> None:
    bad = {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "array", "items": {"type": "string"}, "uniqueItems": True}}}
    with pytest.raises(openai.BadRequestError) as caught:
        ask(client, response_format=bad)
    assert caught.value.body["param"] == "response_format.json_schema.schema"
    assert "uniqueItems" in caught.value.body["message"]
    with pytest.raises(openai.BadRequestError) as caught:
        ask(client, top_logprobs=2)
    assert caught.value.body["param"] == "top_logprobs"
    assert ask(client, max_tokens=2).choices[0].message.content is not None  # serving goes on


class Forecast(BaseModel):
    city: Literal["Oslo", "Bergen", "Tromsø"]
    celsius: int = Field(ge=-40, le=40)
    windy: bool


def test_langchains_structured_output_in_its_default_mode(world: ChatWorld) -> None:
    pytest.importorskip("langchain_openai")
    from langchain_openai import ChatOpenAI

    key = world.key("acme")["Authorization"].removeprefix("Bearer ")
    model = ChatOpenAI(model="chat", base_url="http://testserver/v1", api_key=key,
                       http_client=world.client, max_retries=0)
    forecast = model.with_structured_output(Forecast).invoke("What is the weather in Oslo?")
    assert isinstance(forecast, Forecast)
