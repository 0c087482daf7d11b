"""The task harness through the chat endpoint (``harness.endpoint``, what `hcp demo
--stack` runs): its sessions are the built-in harness's, with the server's word on what
served, and they are scored under the harness contract; a named stop rule ends an
answer where it is complete.

One server for the module (tests/e2e/chat_server.py), on the tiny model.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from access.keys import create_key
from contract.document import parse_contract
from contract.split import subject_split
from tests.e2e.chat_server import TENANT, Served, chat_server
from tests.serving_world import DOCUMENT, taught_lora_dir, train_adapter

pytest.importorskip("peft")
openai = pytest.importorskip("openai")
pytestmark = [pytest.mark.train, pytest.mark.slow]
EXAMPLE = Path(__file__).parents[2] / "examples" / "contracts" / "harness.toml"


def _harness_world() -> str:
    """The chat world's contract with a cap that allows each family's budget: the harness
    asks for its family's ``max_new_tokens``, and a request above the cap is a 400."""
    from harness.tasks.catalog import FAMILIES

    budget = max(f.max_new_tokens for f in FAMILIES.values())
    world = DOCUMENT.replace("max_tokens = 64\n", f"max_tokens = {budget}\n")
    assert parse_contract(world).harness.limits.max_tokens == budget
    return world


WORLD = _harness_world()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[Served]:
    with chat_server(tmp_path_factory.mktemp("chat-harness"), sqlite_template, WORLD) as served:
        yield served


def _rewarded(served: Served, specialist: str) -> None:
    """One exchange rated and ended, then scored: something a run can train on."""
    raw = served.client.chat.completions.with_raw_response.create(
        model=specialist, messages=[{"role": "user", "content": "write a python function"}])
    ended = served.http.post("/v1/feedback", json={"session": raw.headers["x-hcp-session"],
                                                    "rating": 1.0, "end": {"outcome": "success"}})
    assert ended.status_code == 201, ended.text
    served.container.evaluator("chat-harness").drain(timeout=60)


def test_a_stop_rule_ends_the_answer_where_it_is_complete(served: Served) -> None:
    from serving.openai_shapes import ChatRequest
    from serving.prompting import chat_messages, system_text

    c = served.container
    messages = [{"role": "user", "content": "set x in python"}]
    harness = parse_contract(WORLD).harness
    rendered = chat_messages(system_text(harness, "coding", []),
                             ChatRequest.model_validate({"messages": messages}).messages)
    fenced, chatter = "```python\nx = 1\n```", "\nThat sets x to one, as asked."
    _rewarded(served, "coding")
    adapter, _ = train_adapter(c, "coding", 0, "fenced answers", taught_lora_dir(
        Path(c.registry.base_model("tiny").path), served.root / "fenced", rendered, fenced + chatter))
    c.aliases.move("coding", "production", adapter.adapter_id, "tester", "answers in a fence")

    def ask(**extra: Any) -> Any:
        return served.client.chat.completions.create(model="coding", messages=messages,
                                                     temperature=0, max_tokens=64, **extra)

    whole = ask()
    assert whole.choices[0].message.content == fenced + chatter  # the taught answer, all of it
    cut = ask(extra_body={"hcp": {"stop_after": "fence"}})
    assert cut.choices[0].message.content == fenced and cut.choices[0].finish_reason == "stop"
    assert cut.usage.completion_tokens < whole.usage.completion_tokens  # it stopped decoding there
    said = c.store.read_all(0, 5000, tenant=TENANT)
    [recorded] = [e for e in said if e.event_id.hex == cut.id.removeprefix("chatcmpl-")]
    assert recorded.payload["text"] == fenced
    stream = ask(stream=True, extra_body={"hcp": {"stop_after": "fence"}})
    assert "".join(ch.choices[0].delta.content or "" for ch in stream if ch.choices) == fenced
    with pytest.raises(openai.BadRequestError) as refused:  # OpenAI's status for an invalid request
        ask(extra_body={"hcp": {"stop_after": "paragraph"}})
    assert refused.value.body["param"] == "hcp.stop_after"


def test_the_task_harness_through_the_endpoint_records_and_scores_as_the_built_in_one(
        served: Served) -> None:
    from harness.endpoint import EndpointHarness
    from harness.session import session_events, task_of, task_spec
    from harness.sources import HttpSink
    from harness.tasks.catalog import train_tasks
    from inference.stops import after_fence
    from serving.openai_shapes import ChatRequest
    from serving.prompting import chat_messages, system_text
    from trainer.ml.load import load_tokenizer
    from trainer.ml.prompts import prompt_ids

    c, serving = served.container, parse_contract(WORLD).harness
    draft = c.contracts.create_draft("harness", EXAMPLE.read_text().replace(
        'base_model = "smollm2-135m"', 'base_model = "tiny"'), "tester")
    scoring = c.contracts.publish("harness", draft.version, "tester")  # scores; "serve" serves
    key = create_key(c.engine, ["chat:write", "events:write"], "task-harness", tenant=TENANT)
    tasks = train_tasks("coding", 2, lambda text: subject_split(text, text))
    with httpx.Client(base_url=served.base_url, headers={"Authorization": f"Bearer {key}"},
                      timeout=300) as http:
        harness = EndpointHarness(http, HttpSink(http), "serve@1", sandbox=c.code_sandbox,
                                  concurrency=4)
        answers = harness.serve(tasks, k=2, temperature=0.7, seed=3)

    assert [a.task.id for a in answers] == [t.id for t in tasks for _ in range(2)]
    tok = load_tokenizer(c.registry.base_model("tiny").path)
    sessions = []
    for answer in answers:
        events = _session_of(served, answer.text, answer.task.id)
        sessions.append(events[0].stream_id)
        built_in = session_events(answer, "hcp-harness", uuid.uuid4())
        assert [e.type for e in events] == [e.type for e in built_in]
        user, routed, said = events[1], events[2], events[3]
        assert user.payload["task"] == task_spec(answer.task) and user.payload["text"] == answer.task.prompt
        # What the model was given: the serving contract's system message, then the task's
        # own messages (the demo's contract has no prompts: then exactly the task's).
        given = chat_messages(system_text(serving, "coding", []), ChatRequest.model_validate(
            {"messages": answer.task.messages()}).messages)
        assert user.payload["context"] == given[:-1]
        assert said.payload["prompt_tokens"] == len(prompt_ids(tok, "", given))
        replayed = task_of([user.payload])  # the gate can replay the turn as it was served
        assert replayed is not None and (replayed.id, replayed.prompt, replayed.check) == \
            (answer.task.id, answer.task.prompt, answer.task.check)
        assert said.payload["text"] == answer.text and after_fence(answer.text) in (None, len(answer.text))
        assert routed.payload["specialist"] == "coding" and routed.payload["strategy"] == "keywords"
        assert routed.payload["adapter_version"] == answer.adapter_version
        assert events[-1].metadata.adapter_version == answer.adapter_version
        assert events[-1].payload["score"] == answer.check.partial

    c.evaluator("chat-harness").drain(timeout=120)
    _, rewards = c.rewards.of_streams(sessions, limit=1000)
    mine = {r.stream_id: r for r in rewards if r.contract_name == "harness"
            and r.contract_version == scoring.version}
    assert set(mine) == set(sessions)
    for stream, answer in zip(sessions, answers, strict=True):
        assert mine[stream].score == pytest.approx((float(answer.check.passed) + answer.check.partial) / 2)


def _session_of(served: Served, text: str, task_id: str) -> list[Any]:
    """The session whose turn.user carries this task and whose answer is ``text``."""
    found = []
    for event in served.container.store.read_all(0, 10000, tenant=TENANT):
        if event.type == "turn.assistant" and event.payload.get("text") == text:
            stream = served.container.store.read_stream(event.stream_id, 0, 100, TENANT)
            if any(e.type == "turn.user" and (e.payload.get("task") or {}).get("id") == task_id
                   for e in stream):
                found = stream
    assert found, f"no session of {task_id} answered {text!r}"
    return found


def test_hcp_router_train_makes_the_router_that_routes_auto_turns(served: Served) -> None:
    """`hcp router train` on what the harness recorded, the contract moved to the learned
    router, and the running server routes the next auto turn with it (no restart)."""
    import json
    import os
    import subprocess
    import sys

    from harness.endpoint import EndpointHarness
    from harness.sources import HttpSink
    from harness.tasks.catalog import train_tasks
    from tests.serving_world import CONTRACT

    c = served.container
    key = create_key(c.engine, ["chat:write", "events:write"], "router-harness", tenant=TENANT)
    tasks = [t for s in ("chat", "coding") for t in train_tasks(s, 4, lambda text: "train")]
    with httpx.Client(base_url=served.base_url, headers={"Authorization": f"Bearer {key}"},
                      timeout=300) as http:
        EndpointHarness(http, HttpSink(http), "serve@1", sandbox=c.code_sandbox,
                        concurrency=4).serve(tasks, k=1, seed=5)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HCP_")},
           "HCP_DATABASE_URL": str(c.engine.url), "HCP_DATA_DIR": str(served.root / "data"),
           "HCP_MODELS_DIR": str(served.root / "models"), "HCP_SERVING_CONTRACT": CONTRACT}
    hcp = [str(Path(sys.executable).parent / "hcp"), "router"]
    run = subprocess.run([*hcp, "train", "--min-held-out", "1", "--json"], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    trained = json.loads(run.stdout)
    assert trained["router"] == f"{CONTRACT}@1" and trained["labels"] == ["chat", "coding"]
    if not trained["promoted"]:  # the gate's call on a handful of turns; the operator's is final
        promoted = subprocess.run([*hcp, "promote", "1", "--reason", "route with it"], env=env,
                                  capture_output=True, text=True, timeout=120)
        assert promoted.returncode == 0, promoted.stderr[-2000:]

    listed = subprocess.run([*hcp, "list", "--json"], env=env, capture_output=True, text=True,
                            timeout=120)
    assert [(v["router"], v["serving"]) for v in map(json.loads, listed.stdout.splitlines())] == \
        [(f"{CONTRACT}@1", True)]

    learned = WORLD.replace('strategy = "keywords"', 'strategy = "learned"')
    draft = c.contracts.create_draft(CONTRACT, learned, "tester")
    c.contracts.publish(CONTRACT, draft.version, "tester")
    c.serving.move(CONTRACT, None, draft.version, "tester", "route by the learned router")
    raw = served.client.chat.completions.with_raw_response.create(
        model="auto", messages=[{"role": "user", "content": tasks[-1].prompt}], max_tokens=4)
    assert raw.headers["x-hcp-route"] == "learned"
    [routed] = [e for e in served.events(raw.headers["x-hcp-session"]) if e.type == "route.decided"]
    assert routed.payload["router_version"] == f"{CONTRACT}@1"
    assert routed.payload["router_digest"] == trained["artifact_sha256"]
    assert routed.payload["routed_on"] == tasks[-1].prompt
    assert set(routed.payload["scores"]) == {"chat", "coding"}
