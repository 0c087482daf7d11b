"""A request's constraint on its answer compiles to a grammar that takes exactly the texts it
allows; what the decoder cannot enforce is a 400 naming the field and why."""

from __future__ import annotations

from typing import Any

import pytest
from llguidance import LLMatcher, LLTokenizer, TokenizerWrapper

from serving.constrained import constraint_of
from serving.openai_shapes import ChatRequest
from serving.request_checks import RequestRefused

EOS = 256


class Bytes:
    """One token per byte and an end of sequence: any text is spelt one way."""

    eos_token_id, bos_token_id = EOS, None
    tokens = [bytes([b]) for b in range(256)] + [b"<eos>"]
    special_token_ids = [EOS]

    def __call__(self, text: bytes) -> list[int]:
        return list(text)


TOKENIZER = LLTokenizer(TokenizerWrapper(Bytes()))
WEATHER = {"type": "function", "function": {"name": "weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
    "additionalProperties": False}}}
MAIL = {"type": "function", "function": {"name": "mail", "parameters": {
    "type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}}}
WHEN = {"type": "object", "properties": {"city": {"enum": ["Oslo", "Bergen"]},
                                         "celsius": {"type": "integer", "maximum": 50}},
        "required": ["city", "celsius"], "additionalProperties": False}


def request(**fields: Any) -> ChatRequest:
    return ChatRequest.model_validate({"messages": [{"role": "user", "content": "x"}], **fields})


def takes(grammar: str, text: str) -> bool:
    matcher = LLMatcher(TOKENIZER, grammar)
    return matcher.consume_tokens(list(text.encode())) and matcher.consume_token(EOS)


def constraint(**fields: Any) -> Any:
    made = request(**fields)
    return constraint_of(made, made.tools or [])


def test_json_formats_take_what_they_describe_and_nothing_else() -> None:
    obj = constraint(response_format={"type": "json_object"})
    assert obj.kind == "json_object" and takes(obj.grammar, '{"a": [1, 2]}')
    assert not takes(obj.grammar, "[1, 2]") and not takes(obj.grammar, 'Sure! {"a": 1}')
    schema = constraint(response_format={"type": "json_schema", "json_schema": {
        "name": "when", "schema": WHEN, "strict": True}})
    assert schema.kind == "json_schema" and schema.schema == WHEN
    assert takes(schema.grammar, '{"city": "Oslo", "celsius": 21}')
    for bad in ('{"city": "Paris", "celsius": 21}', '{"city": "Oslo", "celsius": 99}',
                '{"city": "Oslo"}', '{"city": "Oslo", "celsius": 21, "wind": 3}'):
        assert not takes(schema.grammar, bad), bad
    assert constraint() is None and constraint(response_format={"type": "text"}) is None


def test_a_forced_call_is_a_call_in_the_gateways_format() -> None:
    named = constraint(tools=[WEATHER, MAIL], tool_choice={"type": "function", "function": {"name": "mail"}})
    assert named.kind == "tool" and takes(named.grammar, '{"tool": "mail", "arguments": {"to": "bo"}}')
    assert not takes(named.grammar, '{"tool": "weather", "arguments": {"city": "Oslo"}}')
    anyone = constraint(tools=[WEATHER, MAIL], tool_choice="required")
    assert takes(anyone.grammar, '{"tool": "weather", "arguments": {"city": "Oslo"}}')
    assert takes(anyone.grammar, '{"tool": "mail", "arguments": {"to": "bo"}}')
    assert not takes(anyone.grammar, '{"tool": "weather", "arguments": {}}')  # city is required
    assert not takes(anyone.grammar, "It is sunny.")


@pytest.mark.parametrize(("fields", "field", "says"), [
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "object", "not": {"required": ["a"]}}}}},
     "response_format.json_schema.schema", "not"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "array", "uniqueItems": True}}}}, "response_format.json_schema.schema", "uniqueItems"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "$ref": "https://example.com/s.json"}}}}, "response_format.json_schema.schema", "example.com"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}},
     "response_format.json_schema", "needs json_schema.schema"),
    ({"response_format": {"type": "json_object"}, "tools": [WEATHER], "tool_choice": "required"},
     "response_format.type", "both constrain"),
    ({"tools": [MAIL, {"type": "function", "function": {"name": "weather", "parameters": {
        "type": "object", "if": {"required": ["a"]}, "then": {"required": ["b"]}}}}],
      "tool_choice": "required"}, "tools[1].function.parameters", "if"),
])
def test_what_the_decoder_cannot_enforce_is_refused_naming_the_field(
        fields: dict[str, Any], field: str, says: str) -> None:
    with pytest.raises(RequestRefused) as refused:
        constraint(**fields)
    assert refused.value.field == field and says in str(refused.value)


def test_a_forced_tool_the_specialist_may_not_call_is_refused() -> None:
    made = request(tools=[WEATHER, MAIL], tool_choice={"type": "function", "function": {"name": "mail"}})
    with pytest.raises(RequestRefused) as refused:
        constraint_of(made, [t for t in made.tools or [] if t.function.name == "weather"])
    assert refused.value.field == "tool_choice.function.name"


@pytest.mark.parametrize(("fields", "field"), [
    ({"response_format": {"type": "json_object"}}, "response_format.type"),
    ({"tools": [WEATHER], "tool_choice": "required"}, "tool_choice"),
    ({"logprobs": True}, "logprobs"),
])
def test_an_engine_that_does_not_constrain_refuses_what_needs_it(fields: dict[str, Any], field: str) -> None:
    from contract.sections import Generation
    from serving.request_checks import check_request

    check_request(request(**fields), Generation(), "c@1", "embedded", True)  # honoured there
    with pytest.raises(RequestRefused) as refused:
        check_request(request(**fields), Generation(), "c@1", "vllm", False)
    assert refused.value.field == field and "vllm engine" in str(refused.value)
