"""Every event type a webhook may subscribe to, made by the code that makes it in the server
(contracts published and retired, a re-evaluation, runs registering, gating, failing,
aliases moved, rolled back and protected, an audit finding a changed artifact, a
subscription disabled), reaches one subscription to all of them in a receiver process,
signed and in log order; and no secret shows in any answer or log line on the way."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from contract.policy import TriggerPolicy
from hcp.bootstrap import Container
from hcp.settings import Settings
from integrations.webhooks.topics import TOPICS
from kernel.db import make_engine
from tests.ports import free_port
from tests.unit.evaluators.factories import contract_text, publish
from tests.unit.trainer_core.factories import seed_contract, seed_dataset, seed_reward
from tests.unit.trainer_core.fixtures import RecordingDispatcher, fake_model_dir, fake_train
from tests.webhooks import SECRET, distinct, received, receiver, wait_for
from trainer.registry.model import PROMOTED
from trainer.runs.runner import run_training

pytestmark = pytest.mark.slow


@pytest.fixture
def container(database_url: str, tmp_path: Path) -> Iterator[Container]:
    settings = Settings(database_url=database_url, kafka_bootstrap="", redis_url="",
                        data_dir=tmp_path / "data", models_dir=tmp_path, webhook_backoff_s=0.2,
                        webhook_backoff_max_s=0.5, webhook_max_attempts=2, webhook_timeout_s=5,
                        webhook_allowed_targets=["127.0.0.1/32"])
    c = Container(settings=settings, engine=make_engine(database_url), dispatch_to=RecordingDispatcher())
    yield c
    c.close()


@pytest.fixture
def delivering(container: Container) -> Iterator[None]:
    stop = threading.Event()
    thread = threading.Thread(target=container.integrations.deliver, args=(stop,), daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(30)


def out_of_memory(*_: Any) -> Any:
    raise MemoryError("CUDA out of memory (a test's)")


def make_every_topic(c: Container, tmp_path: Path) -> None:
    """Each subscribable event, through the service that writes it in the server."""
    digest = seed_contract(c.engine)
    seed_dataset(c.engine, c.store, "chat", contract=("default", 1, digest))
    c.registry.register_base_model("tiny", fake_model_dir(tmp_path / "base"), "tester")
    c.policies.configure("chat", TriggerPolicy(min_new_rewards=4), "tester")

    def fire(why: str) -> str:
        run_id = c.triggers.fire_manual("chat", "tester", why, parent="root").run_id
        seed_reward(c.engine, c.store, "chat", f"q-{why}", "a", 0.9, contract=("default", 1, digest))
        return run_id

    # adapter.registered, training.succeeded (the gate's verdict), alias.moved (auto-promotion)
    one = fake_train(c, fire("v1"), status=PROMOTED)
    two = fake_train(c, fire("v2"))
    c.registry.set_status(two.adapter_id, "promoted", "tester", "ship it", alias="production")
    c.aliases.rollback("chat", "production", "tester", "v2 answers worse")  # rollback, rolled_back
    c.approvals.protect("chat", "production", True, "root", "two people move production")
    c.approvals.request("chat", "production", two.adapter_id, "tester", "v2 fixed")  # requested
    outcome = run_training(replace(c.runner, train=out_of_memory), fire("v3"), "worker-1")
    assert outcome.outcome == "failed", outcome  # training.failed

    path = Path(c.settings.resolved_artifact_dir) / one.artifact_sha256[:2] / one.artifact_sha256
    changed = path / "adapter_model.safetensors"
    os.chmod(changed, 0o644)
    changed.write_bytes(changed.read_bytes() + b"!")
    assert not c.auditor.adapter(one.adapter_id).ok  # audit.failed

    publish(c.contracts, contract_text(name="house"), name="house")  # contract.published
    c.contracts.retire("house", 1, "tester", "superseded")  # contract.retired
    publish(c.contracts, contract_text(name="scoring"), name="scoring")
    c.reevaluations.run(c.reevaluations.start("scoring", 1).job_id)  # reevaluation.finished


def test_every_subscribable_event_type_reaches_the_receiver(
        container: Container, delivering: None, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    client = TestClient(create_app(container))
    ops = {"Authorization": f"Bearer {container.keys.create(['admin'], label='ops')}"}
    port, out = free_port(), tmp_path / "got.jsonl"
    answers = [client.post("/v1/webhooks", headers=ops, json={
        "url": url, "event_types": types, "secret": SECRET}) for url, types in (
        (f"http://127.0.0.1:{port}/all", sorted(TOPICS)),
        (f"http://127.0.0.1:{free_port()}/nobody", ["contract.published"]))]  # to be disabled
    assert [a.status_code for a in answers] == [201, 201], [a.text for a in answers]
    refused = client.post("/v1/webhooks", headers=ops, json={"event_types": ["x"], "secret": SECRET})
    assert refused.status_code == 422
    with receiver(port, out):
        make_every_topic(container, tmp_path)
        got = wait_for(lambda: {g["body"]["type"] for g in distinct(out)} >= set(TOPICS) and distinct(out),
                       60, f"not every type delivered: {sorted(set(TOPICS) - types_in(out))}")
    assert types_in(out) == set(TOPICS)
    assert all(g["valid"] for g in received(out))
    positions = [g["body"]["data"]["position"] for g in got]
    assert positions == sorted(positions)  # log order
    payloads = [(g["body"]["type"], g["body"]["data"]["payload"]) for g in got]
    assert {p["kind"] for t, p in payloads if t == "alias.moved"} == {"move", "rollback"}
    assert "rolled_back" in {p["status"] for t, p in payloads if t == "adapter.status_changed"}
    (failed,) = [p for t, p in payloads if t == "training.failed"]
    assert "out of memory" in failed["error"]
    (audit,) = [p for t, p in payloads if t == "audit.failed"]
    assert "artifacts" in audit["checks"]
    seen = " ".join([a.text for a in answers] + [refused.text, client.get("/v1/webhooks", headers=ops).text,
                     out.read_text(), caplog.text])
    for leak in (SECRET, SECRET.removeprefix("whsec_")):
        assert leak not in seen


def types_in(out: Path) -> set[str]:
    return {g["body"]["type"] for g in distinct(out)}
