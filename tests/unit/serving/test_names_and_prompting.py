"""The pure core of serving: model names, the contract's system message, tool checks and
tool-call parsing, and the events one exchange records."""

from __future__ import annotations

import uuid

import pytest

from contract.document import parse_contract
from harness.router import Route
from inference.names import ModelInvalid, ModelRef, parse_model
from inference.types import BaseModel
from serving.choice import Choice, SlotConfig
from serving.exchange import Exchange, Outcome, check_turn
from serving.openai_shapes import ChatRequest
from serving.prompting import (
    ToolRefused,
    chat_messages,
    check_tools,
    offered_tools,
    system_text,
    tool_call_in,
)
from serving.sessions import SessionState
from tests.serving_world import DOCUMENT

HARNESS = parse_contract(DOCUMENT).harness
WEATHER = {"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}
PYTHON = {"type": "function", "function": {"name": "python.run"}}


@pytest.mark.parametrize(("name", "ref"), [
    (None, ModelRef("auto")), ("auto", ModelRef("auto")), ("coding", ModelRef("slot", "coding")),
    ("coding@staging", ModelRef("alias", "coding", alias="staging")),
    ("coding@3", ModelRef("version", "coding", version=3)),
    ("sha256:" + "a" * 64, ModelRef("digest", digest="a" * 64)),
])
def test_model_names(name: str | None, ref: ModelRef) -> None:
    assert parse_model(name) == ref
    assert parse_model(ref.text) == ref


@pytest.mark.parametrize("name", ["Coding", "coding@", "coding@Prod", "sha256:abc", "a@1@2"])
def test_a_name_that_is_none_of_them_is_refused_naming_the_field(name: str) -> None:
    with pytest.raises(ModelInvalid) as refused:
        parse_model(name)
    assert refused.value.field == "model"


def request(**body: object) -> ChatRequest:
    return ChatRequest.model_validate({"messages": [{"role": "user", "content": "hi"}], **body})


def test_the_system_message_is_the_contracts_then_the_clients() -> None:
    req = ChatRequest.model_validate({"messages": [{"role": "system", "content": "App rules."},
                                                   {"role": "user", "content": "hi"}]})
    [system, user] = chat_messages(system_text(HARNESS, "coding", []), req.messages)
    assert system["content"] == ("You are the test assistant.\n\nAnswer with Python code.\n\n"
                                 "Be brief.\n\nApp rules.")
    assert user == {"role": "user", "content": "hi"}


def test_tools_outside_the_allowlist_are_refused_and_others_offered_per_slot() -> None:
    with pytest.raises(ToolRefused) as refused:
        check_tools(HARNESS, request(tools=[WEATHER, {"type": "function", "function": {"name": "email"}}]))
    assert refused.value.field == "tools[1].function.name"
    both = request(tools=[WEATHER, PYTHON])
    check_tools(HARNESS, both)
    assert [t.function.name for t in offered_tools(HARNESS, "chat", both)] == ["weather"]
    assert [t.function.name for t in offered_tools(HARNESS, "coding", both)] == ["python.run"]
    assert offered_tools(HARNESS, "chat", request(tools=[WEATHER], tool_choice="none")) == []
    menu = system_text(HARNESS, "chat", offered_tools(HARNESS, "chat", both))
    assert "Tools you may call:\n- weather" in menu


def test_an_answer_is_a_tool_call_only_when_it_is_exactly_one_for_an_offered_tool() -> None:
    tools = offered_tools(HARNESS, "chat", request(tools=[WEATHER]))
    call = tool_call_in(' {"tool": "weather", "arguments": {"city": "Oslo"}}\n', tools)
    assert call is not None and (call.name, call.arguments) == ("weather", {"city": "Oslo"})
    for text in ('Sure: {"tool": "weather", "arguments": {}}', '{"tool": "email", "arguments": {}}',
                 '{"tool": "weather", "arguments": {}} and more', '{"tool": "weather"}', "{"):
        assert tool_call_in(text, tools) is None, text
    assert tool_call_in('{"tool": "weather", "arguments": {}}', []) is None


def test_the_last_message_must_be_answerable() -> None:
    check_turn(request())
    with pytest.raises(Exception, match="must be the user's") as refused:
        check_turn(ChatRequest.model_validate({"messages": [{"role": "assistant", "content": "x"}]}))
    assert getattr(refused.value, "field", None) == "messages[0].role"


def exchange(session: SessionState, req: ChatRequest) -> Exchange:
    config = SlotConfig("serve", 2, "h" * 64, HARNESS)
    choice = Choice("coding", "coding@3", "coding@3", "d" * 64, "production",
                    BaseModel("tiny", "/m", "w"), config, Route("coding", {"coding": 1.0}, False),
                    "keywords", "auto")
    messages = chat_messages(system_text(HARNESS, "coding", []), req.messages)
    return Exchange(session, choice, req, messages, [])


def test_an_episodes_first_turn_opens_it_and_carries_the_context() -> None:
    ex = exchange(SessionState(uuid.uuid4(), ()), request())
    opening = ex.opening()
    assert [e.type for e in opening] == ["session.started", "turn.user", "route.decided"]
    assert opening[1].payload["context"][0]["role"] == "system"
    routed = opening[2].payload
    assert (routed["adapter_version"], routed["adapter_digest"], routed["contract"]) == \
        ("coding@3", "d" * 64, "serve@2")
    assert all(e.adapter_version == "coding@3" and e.contract == "serve@2" for e in opening)
    closing = ex.closing(Outcome("x", None, 5, 2, "stop", 12.5))
    assert [e.type for e in closing] == ["turn.assistant"] and closing[0].event_id == ex.assistant_id
    assert closing[0].payload["tokens"] == 2 and closing[0].payload["adapter_digest"] == "d" * 64


def test_a_later_turn_carries_the_conversation_before_it() -> None:
    """A turn is a subject of its own: its answer is trained on what the model was given, so
    a reply to "No, that's not what I asked for." is never read without the question."""
    from datetime import UTC, datetime

    from events.model import EventMetadata, RecordedEvent

    earlier = RecordedEvent(uuid.uuid4(), "s", 1, 1, "turn.assistant", 1, {"text": "Owls hunt."},
                            EventMetadata(actor="a"), datetime(2026, 1, 1, tzinfo=UTC), "", "", "")
    req = ChatRequest.model_validate({"messages": [
        {"role": "user", "content": "Tell me about owls."},
        {"role": "assistant", "content": "Owls hunt."},
        {"role": "user", "content": "No, that's not what I asked for."}]})
    opening = exchange(SessionState(uuid.uuid4(), (earlier,)), req).opening()
    assert [e.type for e in opening] == ["turn.user", "route.decided"]  # the episode goes on
    assert [(m["role"], m["content"]) for m in opening[0].payload["context"][1:]] == [
        ("user", "Tell me about owls."), ("assistant", "Owls hunt.")]


def test_a_harness_task_is_recorded_with_the_turn_and_a_stop_rule_cuts_the_answer() -> None:
    from inference.stops import cut_by_rule

    task = {"id": "coding:1", "check": {"kind": "python_tests"}}
    req = ChatRequest.model_validate({"messages": [{"role": "user", "content": "add"}],
                                      "hcp": {"task": task, "stop_after": "fence"}})
    [_, user, _] = exchange(SessionState(uuid.uuid4(), ()), req).opening()
    assert user.payload["task"] == task and req.stop_after == "fence"
    assert "task" not in exchange(SessionState(uuid.uuid4(), ()), request()).opening()[1].payload
    assert cut_by_rule("```py\nx\n```\nmore", "length", "fence") == ("```py\nx\n```", "stop")
    assert cut_by_rule("```py\nx", "length", "fence") == ("```py\nx", "length")
    assert cut_by_rule('{"a": 1} and', "stop", "json") == ('{"a": 1}', "stop")
    assert cut_by_rule("one\ntwo", "length", None) == ("one\ntwo", "length")
    with pytest.raises(ValueError, match="fence"):
        ChatRequest.model_validate({"messages": [{"role": "user", "content": "x"}],
                                    "hcp": {"stop_after": "paragraph"}})
