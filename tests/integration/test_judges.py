"""Judge criteria on the real stores (SQLite and PostgreSQL) with a real HTTP judge endpoint:
chat turns scored through a pinned judge, the verdict in every reward; history re-scored
under a new version with the very same verdicts, asking nobody; and bad input (the
endpoint down, an answer that does not parse, a model nobody serves) recorded, nothing
lost, no worker stopped."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cli.evaluator import render_dry_run
from evaluators.backlog_rows import DONE, WAITING
from evaluators.dryrun import Selection
from evaluators.judging import JudgeVerdict
from evaluators.rewards import RewardQuery
from events.ingest import Author, ClientEvent, IngestLimits, ingest
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.canonical import canonical_json
from kernel.db import make_engine
from tests.integration.judge_server import JudgeServer, free_port
from tests.unit.evaluators.factories import publish
from tests.webhooks import wait_for

ROOT = Path(__file__).resolve().parents[2]

MODEL = "sha256:" + "5e" * 32
AUTHOR = Author("chat-client", "acme")
CONTRACT = """
[contract]
name = "judged"
description = "chat turns judged by a pinned judge"
schema_version = 1

[harness]
base_model = "hcp-tiny"

[harness.router]
default_specialist = "chat"

[harness.specialists.chat]

[evaluation]
subject = "turn"

[[evaluation.judges]]
id = "quality"
model = "{model}"
prompt = \"\"\"Question: {{{{user_text}}}}
Answer: {{{{assistant_text}}}}
Rate the answer from 1 to 10. Reply with the number only.\"\"\"

[[evaluation.criteria]]
id = "judged"
weight = {weight}
expression = "judge.quality.score"

[[evaluation.criteria]]
id = "kept"
weight = 1.0
expression = "signals.last.regenerated ? 0.0 : 1.0"
"""


def contract(weight: float = 2.0, model: str = MODEL) -> str:
    return CONTRACT.format(model=model, weight=weight)


def grade(messages: list[dict[str, str]]) -> str:
    """The scripted judge: 9 for an answer with "Paris", 2 otherwise; unreadable for "???"."""
    text = messages[-1]["content"]
    answer = text.split("Answer: ", 1)[1]
    if answer.startswith("???"):
        return "splendid"
    return "9" if "Paris" in answer else "2"


def make(database_url: str, endpoint: str | None) -> Container:
    endpoints = {MODEL: {"url": endpoint, "model": "judge"}} if endpoint else {}
    return Container(Settings(database_url=database_url, kafka_bootstrap="",
                              judge_endpoints=endpoints), make_engine(database_url))


@pytest.fixture
def judge() -> Iterator[JudgeServer]:
    with JudgeServer(grade) as server:
        yield server


def chat(c: Container, pairs: list[tuple[str, str]], stream: str | None = None) -> str:
    stream = stream or f"session-{uuid.uuid4()}"
    events = [ClientEvent(stream, "session.started", {"harness": "test"})]
    for question, answer in pairs:
        events += [ClientEvent(stream, "turn.user", {"text": question}),
                   ClientEvent(stream, "turn.assistant", {"text": answer})]
    ingest(c.appender, events, IngestLimits(1000, 1 << 20), AUTHOR)
    return stream


def rewards(c: Container, stream: str, version: int | None = None) -> list:
    found = c.rewards.find(RewardQuery(stream_id=stream, limit=50))
    return [r for r in found if version is None or r.contract_version == version]


def test_chat_turns_are_scored_through_a_pinned_judge_and_rescored_identically(
        database_url: str, judge: JudgeServer) -> None:
    c = make(database_url, judge.url)
    publish(c.contracts, contract(), name="judged")
    stream = chat(c, [("Capital of France?", "Paris."), ("And of Spain?", "Lisbon."),
                      ("thanks", "welcome")])
    c.evaluator().drain(timeout=60)
    first = sorted(rewards(c, stream), key=lambda r: r.subject_id)
    assert [r.components["judged"] for r in first] == [pytest.approx(8 / 9), pytest.approx(1 / 9)]
    for reward in first:
        [j] = reward.judgements
        assert j["model"] == MODEL and len(j["prompt_hash"]) == 64 and j["verdict"] in ("9", "2")
        assert c.store.get(uuid.UUID(j["verdict_event"])).type == JudgeVerdict.TYPE
    assert all(call["judge_header"] == "1" and call["temperature"] == 0 for call in judge.calls)
    asked = len(judge.calls)
    assert asked == 2
    # A new version (only a weight changes) re-scores history: the same verdicts, byte for
    # byte, and the judge is not asked again.
    publish(c.contracts, contract(weight=5.0), name="judged", parent=1)
    c.evaluator().drain(timeout=60)
    second = sorted(rewards(c, stream, version=2), key=lambda r: r.subject_id)
    assert [r.subject_id for r in second] == [r.subject_id for r in first]
    assert [canonical_json(list(r.judgements)) for r in second] == [
        canonical_json(list(r.judgements)) for r in first]
    assert len(judge.calls) == asked
    assert [r.score for r in second] != [r.score for r in first]  # the weights did change
    c.close()


def test_a_judge_endpoint_down_leaves_the_subject_waiting_until_it_answers(database_url: str) -> None:
    port = free_port()
    c = make(database_url, f"http://127.0.0.1:{port}/v1")
    publish(c.contracts, contract(), name="judged")
    stream = chat(c, [("Capital of France?", "Paris."), ("ok", "ok")])
    c.evaluator().drain(timeout=60)  # the worker does not stop
    assert rewards(c, stream) == []
    [waiting] = c.judge_backlog.waiting()
    assert waiting.status == WAITING and waiting.attempts == 1
    assert "did not answer" in (waiting.last_error or "")
    with JudgeServer(grade, port=port):
        with c.engine.begin() as conn:  # the wait after a failure, over
            from evaluators.tables import judge_backlog as jb
            conn.execute(jb.update().values(next_at=jb.c.created_at))
        c.evaluator().drain(timeout=60)
    [reward] = rewards(c, stream)
    assert reward.components["judged"] == pytest.approx(8 / 9)
    assert c.judge_backlog.waiting(status=DONE)[0].subject_id == reward.subject_id
    c.close()


def test_an_answer_that_does_not_parse_is_a_recorded_error_with_its_verdict(
        database_url: str, judge: JudgeServer) -> None:
    c = make(database_url, judge.url)
    publish(c.contracts, contract(), name="judged")
    stream = chat(c, [("Capital of France?", "??? maybe"), ("ok", "ok")])
    c.evaluator().drain(timeout=60)
    [reward] = rewards(c, stream)
    assert reward.score is None and not reward.eligible
    assert reward.errors[0]["item"] == "judge:quality" and reward.errors[0]["kind"] == "judge"
    assert "'splendid'" in reward.errors[0]["message"]
    assert reward.judgements[0]["verdict"] == "splendid"
    c.close()


def test_a_judge_model_nobody_serves_is_named_and_other_contracts_go_on(database_url: str) -> None:
    c = make(database_url, None)
    unknown = "sha256:" + "0f" * 32
    publish(c.contracts, contract(model=unknown), name="judged")
    plain = contract().split("[[evaluation.judges]]")[0].replace('name = "judged"', 'name = "plain"')
    publish(c.contracts, plain + '\n[[evaluation.criteria]]\nid = "one"\nweight = 1.0\n'
            'expression = "1.0"\n', name="plain")
    stream = chat(c, [("Capital of France?", "Paris."), ("ok", "ok")])
    c.evaluator().drain(timeout=60)
    assert [r.contract_name for r in rewards(c, stream)] == ["plain"]
    [waiting] = c.judge_backlog.waiting()
    assert f"judge model {unknown} is not registered" in (waiting.last_error or "")
    c.close()


def test_exported_evaluation_results_name_the_contract_version_the_judge_and_the_completion(
        database_url: str, judge: JudgeServer, tmp_path: Path) -> None:
    port = free_port()
    settings = Settings(database_url=database_url, kafka_bootstrap="", data_dir=tmp_path,
                        judge_endpoints={MODEL: {"url": judge.url, "model": "judge"}},
                        otlp_evaluations_endpoint=f"http://127.0.0.1:{port}/v1/logs")
    c = Container(settings, make_engine(database_url))
    publish(c.contracts, contract(), name="judged")
    stream = chat(c, [("Capital of France?", "Paris."), ("ok", "ok")])
    c.evaluator().drain(timeout=60)
    [reward] = rewards(c, stream)
    answer = next(e for e in c.store.read_stream(stream) if e.type == "turn.assistant")
    out = tmp_path / "logs.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "tests.otlp_receiver", str(port), str(out)], cwd=ROOT)
    exporter = c.integrations.evaluation_exporter()
    assert exporter is not None
    try:
        wait_for(lambda: _listening(port), 20, "the receiver did not come up")
        assert exporter.step() == 1
    finally:
        proc.terminate()
        proc.wait(10)
        exporter.close()
    [record] = [json.loads(line) for line in out.read_text().splitlines()]
    attrs = {k: next(iter(v.values())) for k, v in record["attrs"].items()}
    j = reward.judgements[0]
    assert attrs["hcp.contract.name"] == "judged" and int(attrs["hcp.contract.version"]) == 1
    assert attrs["hcp.judge.quality.model"] == MODEL
    assert attrs["hcp.judge.quality.prompt_hash"] == j["prompt_hash"]
    assert attrs["hcp.judge.quality.verdict"] == "9"
    assert attrs["gen_ai.response.id"] == f"chatcmpl-{answer.event_id.hex}"
    c.close()


def _listening(port: int) -> bool:
    try:
        httpx.post(f"http://127.0.0.1:{port}/v1/logs", content=b"", timeout=1)
        return True
    except httpx.TransportError:
        return False


def test_a_dry_run_shows_the_judges_verdicts_and_publishing_scores_with_them(
        database_url: str, judge: JudgeServer) -> None:
    c = make(database_url, judge.url)
    plain = contract().split("[[evaluation.judges]]")[0]
    publish(c.contracts, plain + '\n[[evaluation.criteria]]\nid = "one"\nweight = 1.0\n'
            'expression = "1.0"\n', name="judged")
    stream = chat(c, [("Capital of France?", "Paris."), ("And of Spain?", "Lisbon."), ("ok", "ok")])
    c.evaluator().drain(timeout=60)
    draft = c.contracts.create_draft("judged", contract(), "test", parent_version=1)
    run = c.dry_runs.run("judged", draft.version, Selection(last=10))
    shown = run.to_json()["judges"]
    assert shown["judged"] == 2 and shown["waiting"] == 0
    quality = shown["judges"]["quality"]
    assert quality["model"] == MODEL and quality["verdicts"] == 2 and quality["unreadable"] == 0
    assert sorted(s["verdict"] for s in quality["samples"]) == ["2", "9"]
    printed = render_dry_run(run)  # what `hcp contract dry-run` prints
    assert "judged 2 subjects" in printed and "judge quality (" in printed
    assert "'9' -> score 0.8889" in printed and "'2' -> score 0.1111" in printed
    asked = len(judge.calls)
    assert asked == 2
    c.contracts.publish("judged", draft.version, "test")
    c.evaluator().drain(timeout=60)
    judged = rewards(c, stream, version=draft.version)
    assert sorted(r.judgements[0]["verdict"] for r in judged) == ["2", "9"]
    assert len(judge.calls) == asked  # publishing scored with the verdicts the dry run saw
    c.close()


def test_a_dry_run_with_its_judge_down_says_why_and_publishing_is_not_blocked_by_it(
        database_url: str) -> None:
    c = make(database_url, f"http://127.0.0.1:{free_port()}/v1")
    stream = chat(c, [("Capital of France?", "Paris."), ("ok", "ok")])
    draft = c.contracts.create_draft("judged", contract(), "test")
    run = c.dry_runs.run("judged", draft.version, Selection(last=10)).to_json()
    assert run["judges"]["judged"] == 0 and run["judges"]["waiting"] == 1
    assert "did not answer" in run["judges"]["reason"] and run["check"]["passed"]
    c.publisher.publish("judged", draft.version, "test")  # the check counts no error for it
    c.evaluator().drain(timeout=60)
    assert rewards(c, stream) == [] and len(c.judge_backlog.waiting()) == 1
    c.close()


@pytest.mark.train
def test_a_registered_base_model_judges_through_the_engine(sqlite_url: str, tmp_path: Path) -> None:
    pytest.importorskip("peft")
    from trainer.ml.tiny_model import build_tiny_base_model

    c = Container(Settings(database_url=sqlite_url, kafka_bootstrap="", data_dir=tmp_path,
                           models_dir=tmp_path / "models"), make_engine(sqlite_url))
    path = build_tiny_base_model(tmp_path / "models" / "tiny", seed=0)
    digest = "sha256:" + c.registry.register_base_model("tiny", path, "tester").weights_sha256
    publish(c.contracts, contract(model=digest), name="judged")
    stream = chat(c, [("Capital of France?", "Paris."), ("ok", "ok")])
    c.evaluator().drain(timeout=120)
    [reward] = rewards(c, stream)
    [j] = reward.judgements
    verdict = c.store.get(uuid.UUID(j["verdict_event"]))
    assert verdict.payload["served_by"] == "engine" and verdict.payload["served_digest"] == digest
    assert verdict.payload["verdict"] == j["verdict"]
    # The same request again gives the same answer (greedy, seeded): what the memo relies on.
    again = c.judging.models.ask(next(iter(_requests(c, stream))))
    assert again.text[:4000] == j["verdict"]
    c.close()


def _requests(c: Container, stream: str) -> list:
    from contract.judged import requests
    from evaluators.active import compile_version
    from evaluators.scoring import input_for

    version = compile_version(c.contracts.get("judged", 1), None)
    subjects = c.evaluator().subjects.closed_at({stream: [3, 4, 5, 6]}, {"turn"})
    return [r for s in subjects for r in requests(version.compiled, input_for(s, version))]


def test_publishing_a_judge_nobody_serves_is_refused_naming_it_unless_forced(database_url: str) -> None:
    from evaluators.publishing import JudgeUnknown

    c = make(database_url, None)
    unknown = "sha256:" + "0f" * 32
    draft = c.contracts.create_draft("judged", contract(model=unknown), "test")
    with pytest.raises(JudgeUnknown, match=f"judge model {unknown} is not registered"):
        c.publisher.publish("judged", draft.version, "test")
    assert c.contracts.get("judged", draft.version).status == "draft"
    published, _ = c.publisher.publish("judged", draft.version, "test", force=True,
                                       reason="its endpoint is configured next")
    assert published.status == "published"
    c.close()


def test_a_changed_judge_is_a_new_version_that_asks_again_for_history(database_url: str,
                                                                       judge: JudgeServer) -> None:
    c = make(database_url, judge.url)
    publish(c.contracts, contract(), name="judged")
    stream = chat(c, [("Capital of France?", "Paris."), ("ok", "ok")])
    c.evaluator().drain(timeout=60)
    [first] = rewards(c, stream)
    changed = contract().replace("Reply with the number only.", "Reply with one number.")
    publish(c.contracts, changed, name="judged", parent=1)
    c.evaluator().drain(timeout=60)  # the re-evaluation waits for the judge, then the backlog asks
    [second] = rewards(c, stream, version=2)
    assert c.contracts.get("judged", 2).content_hash != c.contracts.get("judged", 1).content_hash
    assert second.judgements[0]["prompt_hash"] != first.judgements[0]["prompt_hash"]
    assert len(judge.calls) == 2
    assert first.judgements[0]["verdict_event"] != second.judgements[0]["verdict_event"]
    c.close()
