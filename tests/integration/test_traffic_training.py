"""A successor trained from chat traffic alone (tiny model, in process, SQLite): users'
turns scored under a contract with a pinned judge (the base itself, through the engine)
and what the users did next; the trigger fires on them; the run trains on corrections and
regenerations (rejection sampling, or DPO on the pairs they make), is gated on held-out
traffic, and is registered with its gate record; the audit derives its examples again."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from contract.split import subject_split
from events.ingest import Author, ClientEvent, IngestLimits, ingest
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.clock import utcnow
from kernel.db import make_engine
from tests.unit.evaluators.factories import publish
from tests.unit.trainer_core.fixtures import RecordingDispatcher

pytestmark = pytest.mark.train
AUTHOR = Author("chat-client", "acme")
SYSTEM = [{"role": "system", "content": "You are a helpful assistant."}]
CONTRACT = """
[contract]
name = "traffic"
description = "chat traffic, judged"
schema_version = 1

[harness]
base_model = "tiny"

[harness.sessions]
idle_timeout = "10m"

[harness.router]
strategy = "fixed"
default_specialist = "chat"

[harness.specialists.chat]

[evaluation]
subject = "turn"

[[evaluation.judges]]
id = "quality"
model = "sha256:{digest}"
prompt = "Question: {{{{user_text}}}}\\nAnswer: {{{{assistant_text}}}}\\nRate it from 1 to 10."
max_tokens = 4
unreadable = 0.5

[[evaluation.criteria]]
id = "kept"
weight = 3.0
expression = "signals.last.regenerated ? 0.0 : 1.0"

[[evaluation.criteria]]
id = "undisputed"
weight = 3.0
expression = "signals.corrected > 0 ? 0.0 : 1.0"

[[evaluation.criteria]]
id = "judged"
weight = 1.0
expression = "judge.quality.score"

[training.triggers.chat]
min_new_rewards = 4
gate_metric = "offline"
hyper = {hyper}
"""
RFT = ('{ traffic = true, objective = "sft", selection = "best_of_k", min_reward = 0.7, steps = 4, '
       'rank = 4, alpha = 8, learning_rate = 0.005, batch_size = 2, max_len = 64 }')
DPO = ('{ traffic = true, objective = "dpo", dpo_nll_weight = 1.0, min_reward = 0.7, steps = 4, '
       'rank = 4, alpha = 8, learning_rate = 0.005, batch_size = 2, max_len = 64 }')


def questions(side: str, n: int) -> list[str]:
    found = (f"Tell me about topic {i}." for i in range(1000))
    return [q for q in found if subject_split("", q) == side][:n]


def session(c: Container, question: str, answer: str, regenerated: str | None = None,
            correction: str | None = None) -> str:
    stream = f"session-{uuid.uuid4()}"
    events = [ClientEvent(stream, "session.started", {"harness": "test"}),
              ClientEvent(stream, "turn.user", {"text": question, "context": SYSTEM}),
              ClientEvent(stream, "turn.assistant", {"text": answer})]
    if correction is not None:
        events.append(ClientEvent(stream, "feedback.given", {"rating": -1.0, "correction": correction}))
    if regenerated is not None:
        events += [ClientEvent(stream, "turn.user", {"text": question}),
                   ClientEvent(stream, "turn.assistant", {"text": regenerated})]
    served = [replace(e, specialist="chat") for e in events]  # as the gateway records them
    ingest(c.appender, served, IngestLimits(1000, 1 << 20), AUTHOR)
    return stream


@pytest.mark.parametrize("hyper", [RFT, DPO], ids=["rft", "dpo"])
def test_a_successor_trained_from_traffic_alone_is_gated_and_registered(sqlite_url: str, tmp_path: Path,
                                                                         hyper: str) -> None:
    pytest.importorskip("peft")
    from trainer.ml.tiny_model import build_tiny_base_model

    c = Container(Settings(database_url=sqlite_url, kafka_bootstrap="", data_dir=tmp_path,
                           models_dir=tmp_path / "models", serving_contract="traffic"),
                  make_engine(sqlite_url), dispatch_to=RecordingDispatcher())
    path = build_tiny_base_model(tmp_path / "models" / "tiny", seed=0)
    digest = c.registry.register_base_model("tiny", path, "tester").weights_sha256
    publish(c.contracts, CONTRACT.format(digest=digest, hyper=hyper), name="traffic")
    corrected = {}
    for n, question in enumerate(questions("train", 6)):
        if n % 2 == 0:
            corrected[session(c, question, "a long wrong answer", correction=f"short {n}")] = n
        else:
            session(c, question, "a bad answer", regenerated=f"a better answer {n}")
    for n, question in enumerate(questions("held_out", 4)):
        session(c, question, f"held {n}", correction="short" if n % 2 else None)
    c.session_expiry(clock=lambda: utcnow() + timedelta(hours=1)).sweep()
    c.evaluator().drain(timeout=300)
    [check] = [r for r in c.triggers.evaluate() if r.fired is not None]
    outcome = c.train(check.fired.run_id, "tester")
    assert outcome.outcome == "succeeded", outcome.error
    adapter = c.registry.adapter(outcome.adapter_id)
    assert adapter.status in ("candidate", "rejected")  # auto_promote is off: the gate decides
    gate = adapter.metrics["gate"]
    assert gate["metric"] == "offline" and gate["held_out"] >= 4 and "reason" in gate
    training = adapter.metrics["training"]
    if hyper == DPO:
        # 3 corrections, 3 regenerations
        assert training["objective"] == "dpo" and training["pairs_used"] >= 6
    else:
        assert training["objective"] == "sft" and training["examples_used"] >= 3  # the corrections
    [succeeded] = [e for e in c.store.read_stream(f"training_run:{outcome.run_id}", 0, 100)
                   if e.type == "training.succeeded"]
    chosen = set(succeeded.payload["examples"])
    rewards = {str(r.reward_id): r for r in c.rewards.eligible("chat", "traffic", 0, 1 << 40)}
    streams = {rewards[i].stream_id for i in chosen if i in rewards}
    assert set(corrected) <= streams  # every corrected answer taught its correction
    report = c.auditor.everything()  # the audit derives the run's examples again
    assert report.ok, [x.to_json() for x in report.checks if not x.ok]
    c.close()
