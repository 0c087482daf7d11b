"""A stock OpenAI client against `hcp serve` on the tiny model: answers from the adapters
the registry names, every exchange in the log and scored, sessions, tools and feedback.

One server for the module (tests/e2e/chat_server.py); the world (base model, serving
contract ``serve``, specialists) is tests/serving_world.py.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from access.keys import create_key
from contract.document import parse_contract
from tests.e2e.chat_server import TENANT, Served, chat_server
from tests.serving_world import CONTRACT, DOCUMENT, taught_lora_dir, train_adapter

pytest.importorskip("peft")
openai = pytest.importorskip("openai")
pytestmark = [pytest.mark.train, pytest.mark.slow]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[Served]:
    with chat_server(tmp_path_factory.mktemp("chat"), sqlite_template) as served:
        yield served


def test_the_server_warmed_chat_at_start_and_says_it_is_ready(served: Served) -> None:
    # First in the module: no chat request has been made. The server came up when
    # /healthz first answered below 500, which it does only once chat can answer.
    health = served.http.get("/healthz")
    assert health.status_code == 200 and health.json()["checks"]["chat"]["status"] == "ok"


def test_auto_routes_the_turn_and_every_event_names_what_served(served: Served) -> None:
    raw = served.client.chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": "write a python function"}])
    answer = raw.parse()
    h = raw.headers
    assert (h["x-hcp-specialist"], h["x-hcp-adapter-version"], h["x-hcp-served-base"]) == \
        ("coding", "coding@0", "true")  # no production alias yet: the bare base, and it says so
    assert h["x-hcp-contract"] == f"{CONTRACT}@1" and h["x-hcp-route"] == "keywords"
    session = h["x-hcp-session"]
    assert served.types(session) == ["session.started", "turn.user", "route.decided",
                                     "turn.assistant"]
    opened, user, routed, said = served.events(session)
    assert user.payload["context"][0]["content"].startswith("You are the test assistant.")
    assert "Answer with Python code." in user.payload["context"][0]["content"]
    assert routed.payload["scores"] == {"coding": 1.0} and routed.payload["strategy"] == "keywords"
    assert said.payload["text"] == answer.choices[0].message.content
    assert said.payload["tokens"] == answer.usage.completion_tokens <= 64  # the contract's limit
    assert said.metadata.tenant == TENANT and answer.id == f"chatcmpl-{said.event_id.hex}"
    assert served.client.models.list().data[0].id == "auto"


def test_streaming_sends_the_recorded_text_and_the_usage_chunk(served: Served) -> None:
    stream = served.client.chat.completions.create(
        model="chat", messages=[{"role": "user", "content": "hello"}], stream=True,
        stream_options={"include_usage": True})
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert chunks[-1].usage is not None and chunks[-1].choices == []
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finish in (["stop"], ["length"])
    said = next(e for e in _all_events(served) if e.event_id.hex == chunks[0].id.removeprefix("chatcmpl-"))
    assert said.payload["text"] == text
    assert said.payload["tokens"] == chunks[-1].usage.completion_tokens


def test_a_session_over_turns_is_scored_and_trained_on(served: Served) -> None:
    first = served.client.chat.completions.with_raw_response.create(
        model="chat", messages=[{"role": "user", "content": "hello"}])
    session = first.headers["x-hcp-session"]
    history = [{"role": "user", "content": "hello"},
               {"role": "assistant", "content": first.parse().choices[0].message.content}]
    for text in ("and the weather?", "thanks"):
        history.append({"role": "user", "content": text})
        answer = served.client.chat.completions.create(
            model="chat", messages=history, extra_headers={"X-HCP-Session": session})
        history.append({"role": "assistant", "content": answer.choices[0].message.content})
    assert served.types(session).count("turn.user") == 3
    assert served.types(session).count("session.started") == 1
    ended = served.http.post("/v1/feedback", json={"session": session, "rating": 1.0,
                                                    "correction": "Hi!", "end": {"outcome": "success"}})
    assert ended.status_code == 201, ended.text
    assert served.types(session)[-2:] == ["feedback.given", "episode.completed"]

    c = served.container
    c.evaluator("chat-test").drain(timeout=60)
    [reward] = [r for r in c.rewards.of_streams([f"session-{session}"])[1]
                if r.contract_name == CONTRACT]
    assert reward.score == 1.0 and reward.specialist == "chat"  # rating 1 -> (1 + 1) / 2
    _, firing = train_adapter(c, "chat", seed=5, reason="learn from served sessions")
    manifest = c.manifests.rebuild(c.runs.get(firing.run_id).manifest_id)
    assert f"episode:session-{session}:{len(served.events(session))}" in manifest.subject_event_ids


def test_a_user_continues_their_session_and_other_tenants_cannot(served: Served) -> None:
    user = f"u-{uuid.uuid4().hex[:6]}"
    a = served.client.chat.completions.with_raw_response.create(
        model="chat", user=user, messages=[{"role": "user", "content": "hello"}])
    b = served.client.chat.completions.with_raw_response.create(
        model="chat", user=user, messages=[{"role": "user", "content": "again"}])
    assert a.headers["x-hcp-session"] == b.headers["x-hcp-session"]
    other = create_key(served.container.engine, ["chat:write"], f"other-{user}", tenant="globex")
    stranger = openai.OpenAI(base_url=str(served.client.base_url), api_key=other, max_retries=0)
    with pytest.raises(openai.NotFoundError, match="no session"):
        stranger.chat.completions.create(model="chat", messages=[{"role": "user", "content": "hi"}],
                                         extra_headers={"X-HCP-Session": a.headers["x-hcp-session"]})
    reader = create_key(served.container.engine, ["events:read"], f"reader-{user}", tenant=TENANT)
    with pytest.raises(openai.PermissionDeniedError, match="chat:write"):
        openai.OpenAI(base_url=str(served.client.base_url), api_key=reader,
                      max_retries=0).models.list()


def test_tools_are_checked_against_the_contract_and_calls_come_back_as_tool_calls(
        served: Served) -> None:
    from serving.openai_shapes import ChatRequest
    from serving.prompting import chat_messages, offered_tools, system_text

    weather = {"type": "function", "function": {
        "name": "weather", "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    with pytest.raises(openai.BadRequestError, match="not in the serving contract's"):
        served.client.chat.completions.create(
            model="chat", messages=[{"role": "user", "content": "hi"}],
            tools=[{"type": "function", "function": {"name": "email"}}])
    # The chat slot, taught to call the weather tool for this request, goes to production.
    messages = [{"role": "user", "content": "weather in Oslo?"}]
    request = ChatRequest.model_validate({"messages": messages, "tools": [weather]})
    harness = parse_contract(DOCUMENT).harness
    rendered = chat_messages(system_text(harness, "chat", offered_tools(harness, "chat", request)),
                             request.messages)
    c = served.container
    scored_session(served, "chat")
    call = '{"tool": "weather", "arguments": {"city": "Oslo"}}'
    adapter, _ = train_adapter(c, "chat", 0, "tool calls", taught_lora_dir(
        Path(c.registry.base_model("tiny").path), served.root / "taught", rendered, call))
    c.aliases.move("chat", "production", adapter.adapter_id, "tester", "calls tools")

    raw = served.client.chat.completions.with_raw_response.create(
        model="chat", messages=messages, tools=[weather])
    answer = raw.parse()
    assert raw.headers["x-hcp-adapter-version"] == adapter.adapter_id
    assert raw.headers["x-hcp-adapter-digest"] == adapter.artifact_sha256
    assert answer.choices[0].message.tool_calls, answer.choices[0].message.content
    [tool_call] = answer.choices[0].message.tool_calls
    assert answer.choices[0].finish_reason == "tool_calls"
    assert (tool_call.function.name, json.loads(tool_call.function.arguments)) == \
        ("weather", {"city": "Oslo"})
    session = raw.headers["x-hcp-session"]
    assert served.types(session)[-1] == "tool.called"
    assert served.events(session)[-1].payload["call_id"] == tool_call.id

    # The client runs the tool and sends its result back: the same turn goes on.
    follow = [*messages, answer.choices[0].message.model_dump(exclude_none=True),
              {"role": "tool", "tool_call_id": tool_call.id, "content": "sunny, 21 C"}]
    served.client.chat.completions.create(model="auto", messages=follow, tools=[weather],
                                          extra_headers={"X-HCP-Session": session})
    assert served.types(session)[-3:] == ["tool.result", "route.decided", "turn.assistant"]
    result = [e for e in served.events(session) if e.type == "tool.result"][-1]
    assert result.payload == {"call_id": tool_call.id, "ok": True, "output": "sunny, 21 C"}


def scored_session(served: Served, model: str, text: str = "hello", rating: float = 1.0) -> str:
    """One served exchange, rated and ended, then scored: something a run can train on."""
    raw = served.client.chat.completions.with_raw_response.create(
        model=model, messages=[{"role": "user", "content": text}])
    session = raw.headers["x-hcp-session"]
    ended = served.http.post("/v1/feedback", json={"session": session, "rating": rating,
                                                    "end": {"outcome": "success"}})
    assert ended.status_code == 201, ended.text
    served.container.evaluator("chat-test").drain(timeout=60)
    return session


def _all_events(served: Served) -> list[Any]:
    return served.container.store.read_all(0, 5000, tenant=TENANT)


def test_alias_flips_under_load_every_turn_names_the_bytes_that_answered(served: Served) -> None:
    from concurrent.futures import ThreadPoolExecutor

    c = served.container
    scored_session(served, "coding", "write a python function")
    first, _ = train_adapter(c, "coding", 11, "flip a")
    second, _ = train_adapter(c, "coding", 12, "flip b")
    prompt = [{"role": "user", "content": "def add(a, b):"}]

    def ask(model: str) -> Any:
        return served.client.chat.completions.with_raw_response.create(
            model=model, messages=prompt, max_tokens=8, temperature=0)

    reference = {a.artifact_sha256: ask(a.adapter_id).parse().choices[0].message.content
                 for a in (first, second)}
    assert len(set(reference.values())) == 2, reference  # the two answer differently
    c.aliases.move("coding", "production", first.adapter_id, "tester", "flip 0")
    done: list[Any] = []
    errors: list[str] = []

    def client(n: int) -> None:
        for _ in range(125):
            try:
                done.append(ask("coding"))
            except Exception as exc:  # noqa: BLE001 (counted: the test wants none)
                errors.append(repr(exc))

    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(client, n) for n in range(4)]
        for flip in range(1, 21):
            while len(done) + len(errors) < flip * 24 and not all(f.done() for f in futures):
                time.sleep(0.01)
            target = (first, second)[flip % 2]
            c.aliases.move("coding", "production", target.adapter_id, "tester", f"flip {flip}")
        for f in futures:
            f.result()
    assert errors == [] and len(done) == 500
    recorded = {e.event_id.hex: e for e in _all_events(served) if e.type == "turn.assistant"}
    served_by = {digest: 0 for digest in reference}
    for raw in done:
        answer, digest = raw.parse(), raw.headers["x-hcp-adapter-digest"]
        assert answer.choices[0].message.content == reference[digest]
        said = recorded[answer.id.removeprefix("chatcmpl-")]  # every turn is recorded
        assert said.payload["adapter_digest"] == digest
        assert said.payload["text"] == reference[digest]
        served_by[digest] += 1
    assert all(n > 0 for n in served_by.values()), served_by
