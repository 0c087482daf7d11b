"""A hostile tenant against the stream namespace: the names of the streams the server
derives (a chat user's session, an OTLP conversation) are computable, so a client may not
open one first; and whether another tenant's stream exists is not told by the answer to
a write naming it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.chat_world import ChatWorld, chat_world

pytest.importorskip("peft")
pytestmark = [pytest.mark.train]
WRITE = ("events:write", "events:read", "chat:write")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[ChatWorld]:
    with chat_world(tmp_path_factory.mktemp("streams"), sqlite_template) as found:
        yield found


def _write(world: ChatWorld, auth: dict[str, str], stream: str, **fields: object) -> httpx.Response:
    event = {"stream_id": stream, "type": "x.note", "payload": {"n": 1}, **fields}
    return world.client.post("/v1/events", headers=auth, json={"events": [event]})


def _user_stream(world: ChatWorld, tenant: str, user: str) -> str:
    """The stream the gateway records ``user``'s chat of ``tenant`` on (its own derivation)."""
    return world.container.chat.sessions.for_request(None, user, tenant).stream_id


def test_a_tenant_cannot_open_another_tenants_chat_user_session_first(world: ChatWorld) -> None:
    mallory, acme = world.key("mallory", WRITE), world.key("acme", WRITE)
    stream = _user_stream(world, "acme", "alice")
    squat = _write(world, mallory, stream)
    assert squat.status_code == 404, squat.text
    answered = world.chat(acme, user="alice")
    assert answered.status_code == 200, answered.text
    assert f"session-{answered.headers['X-HCP-Session']}" == stream
    own = _write(world, acme, stream)  # acme's own client appends to the open session
    assert own.status_code == 201, own.text


def test_a_tenant_cannot_open_another_tenants_otlp_conversation_first(world: ChatWorld) -> None:
    mallory, acme = world.key("mallory", WRITE), world.key("acme", WRITE)
    squat = _write(world, mallory, "otel:acme:conv-squatted")
    assert squat.status_code == 404, squat.text
    span = {"name": "chat", "traceId": "0102030405060708090a0b0c0d0e0f10",
            "spanId": "0102030405060708", "startTimeUnixNano": "1", "endTimeUnixNano": "2",
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                {"key": "gen_ai.conversation.id", "value": {"stringValue": "conv-squatted"}},
                {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}])}},
                {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "hello"}]}])}}]}
    export = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    answered = world.client.post("/v1/traces", headers={**acme, "Content-Type": "application/json"},
                                 content=json.dumps(export))
    assert answered.status_code == 200, answered.text
    assert int(answered.headers["X-HCP-Events-Created"]) > 0


def test_expected_seq_does_not_tell_whether_another_tenants_user_ever_chatted(
        world: ChatWorld) -> None:
    mallory, acme = world.key("mallory", WRITE), world.key("acme", WRITE)
    assert world.chat(acme, user="carol").status_code == 200
    chatted, never = _user_stream(world, "acme", "carol"), _user_stream(world, "acme", "dave")
    for expected in (None, 0, 1, 5):
        fields = {} if expected is None else {"expected_seq": expected}
        a, b = _write(world, mallory, chatted, **fields), _write(world, mallory, never, **fields)
        assert a.status_code == b.status_code, (expected, a.text, b.text)
        assert a.text.replace(chatted, "S") == b.text.replace(never, "S"), (expected, a.text, b.text)


def test_expected_seq_on_another_tenants_stream_answers_as_on_a_missing_one(
        world: ChatWorld) -> None:
    mallory, acme = world.key("mallory", WRITE), world.key("acme", WRITE)
    assert _write(world, acme, "orders-acme-1").status_code == 201
    taken = _write(world, mallory, "orders-acme-1", expected_seq=3)
    missing = _write(world, mallory, "orders-nobody-1", expected_seq=3)
    assert taken.status_code == missing.status_code == 409, (taken.text, missing.text)
    assert taken.json()["error"]["message"].replace("orders-acme-1", "S") == \
        missing.json()["error"]["message"].replace("orders-nobody-1", "S")
