"""`hcp serve`'s own gateway as the judge endpoint (tiny model): a stock OpenAI client's
chat is judged by the base model named by its weights digest, the verdict is in the
reward, and the judge's calls are not recorded as conversations."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from access.keys import create_key
from evaluators.rewards import RewardQuery
from hcp.bootstrap import Container
from tests.e2e.chat_server import Served, chat_server
from tests.unit.evaluators.factories import publish

pytest.importorskip("peft")
pytest.importorskip("openai")
pytestmark = [pytest.mark.train, pytest.mark.slow]

JUDGED = """
[contract]
name = "judged"
description = "chat turns judged by the base model itself"
schema_version = 1

[harness]
base_model = "tiny"

[harness.router]
default_specialist = "chat"

[harness.specialists.chat]

[evaluation]
subject = "turn"

[[evaluation.judges]]
id = "quality"
model = "sha256:{digest}"
prompt = "Question: {{{{user_text}}}}\\nAnswer: {{{{assistant_text}}}}\\nRate the answer from 1 to 10."
max_tokens = 8

[[evaluation.criteria]]
id = "judged"
weight = 1.0
expression = "judge.quality.score"
"""


def judge_world(c: Container, port: int) -> dict[str, str]:
    digest = c.registry.base_model("tiny").weights_sha256
    publish(c.contracts, JUDGED.format(digest=digest), name="judged")
    key = create_key(c.engine, ["chat:write"], "evaluator-judge")  # an operator key
    endpoint = {"url": f"http://127.0.0.1:{port}/v1", "model": "chat",
                "api_key": key}
    return {"HCP_JUDGE_ENDPOINTS": json.dumps({f"sha256:{digest}": endpoint})}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[Served]:
    with chat_server(tmp_path_factory.mktemp("judge"), sqlite_template, prepare=judge_world) as served:
        yield served


def test_the_gateway_judges_a_stock_clients_turn_without_recording_the_judges_call(served: Served) -> None:
    first = served.client.chat.completions.with_raw_response.create(
        model="chat", messages=[{"role": "user", "content": "hello there"}])
    session = first.headers["x-hcp-session"]
    answer = first.parse().choices[0].message.content
    served.client.chat.completions.create(
        model="chat", extra_headers={"X-HCP-Session": session},
        messages=[{"role": "user", "content": "hello there"}, {"role": "assistant", "content": answer},
                  {"role": "user", "content": "and the weather?"}])
    stream = f"session-{session}"
    reward = _wait_for_reward(served.container, stream, "judged")
    [j] = reward.judgements
    digest = served.container.registry.base_model("tiny").weights_sha256
    assert j["model"] == f"sha256:{digest}" and len(j["prompt_hash"]) == 64
    verdict = served.container.store.get(uuid.UUID(j["verdict_event"]))
    assert verdict.payload["verdict"] == j["verdict"] and verdict.payload["served_by"] == "http"
    assert verdict.payload["served_digest"] == f"sha256:{digest}"
    assert (reward.score is None) == (j["error"] is not None)  # read, or an error that says why
    sessions = {e.stream_id for e in served.container.store.read_all(0, 10_000)
                if e.stream_id.startswith("session-")}
    assert sessions == {stream}  # the judge's call is not a conversation


def _wait_for_reward(c: Container, stream: str, contract: str, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [r for r in c.rewards.find(RewardQuery(stream_id=stream, limit=10))
                 if r.contract_name == contract]
        if found:
            return found[0]
        time.sleep(0.5)
    waiting = [w.to_json() for w in c.judge_backlog.waiting()]
    raise AssertionError(f"no reward under {contract} within {timeout:.0f}s; waiting: {waiting}")


def test_a_tenant_key_cannot_ask_for_an_unrecorded_answer(served: Served) -> None:
    answer = served.http.post("/v1/chat/completions", headers={"X-HCP-Judge": "1"},
                              json={"model": "chat", "messages": [{"role": "user", "content": "hi"}]})
    assert answer.status_code == 403 and "operator" in answer.text
