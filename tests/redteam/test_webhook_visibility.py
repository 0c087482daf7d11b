"""A tenant's subscription as a way round the API's visibility: the events it hears carry
what the API keeps from that tenant (the gate's held-out cases, which are other tenants'
sessions, and both models' answers to them; the examples a run trained on; the publish
check's samples; the artifact's path on the server). A delivery must show no more than the
same key reads through the API."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evaluators.rewards import RewardQuery
from tests.integration.tenant_world import conversation
from tests.ports import free_port
from tests.redteam.webhook_world import Hooks, world
from tests.unit.evaluators.factories import contract_text, publish
from tests.unit.trainer_core.fixtures import fake_model_dir, fake_train
from tests.webhooks import distinct, receiver, wait_for
from trainer.gate.rollout import RolloutMetrics
from trainer.runs.selection import Selection

pytestmark = pytest.mark.slow
LEAKY = "{'x': 1.0}[events[1].payload.text]"  # a criterion whose error quotes the answer


@pytest.fixture
def hooks(postgres_url: str, tmp_path: Path) -> Iterator[Hooks]:
    with world(postgres_url, tmp_path) as made:
        publish(made.container.contracts, contract_text())  # what scores the conversations
        yield made


def stream_of(hooks: Hooks, tenant: str) -> str:
    stream = f"{tenant}-{uuid.uuid4().hex[:6]}"
    answer = hooks.client.post("/v1/events", json={"events": conversation(stream)},
                               headers=hooks.keys[f"{tenant}-w"])
    assert answer.status_code == 201, answer.text
    return stream


def gate_record(cases: tuple[str, ...]) -> dict[str, Any]:
    def side(answer: str) -> dict[str, Any]:
        return RolloutMetrics(mean_reward=0.5, n=len(cases), errors=0, per_criterion={"answered": 1.0},
                              error_samples=(f"criterion:x: no such key: '{cases[-1]}'",),
                              responses_sha256="0" * 64, rewards=(1.0,) * len(cases), cases=cases,
                              answers=tuple(f"{answer} for {c}" for c in cases)).to_dict()

    return {"promote": False, "reason": "fake gate", "metric": "rollout", "seed": 7,
            "rollouts": {"successor": side("new reply"), "parent": side("old reply"), "harness": "text"}}


def sub_structure(delivered: Any, read: Any, where: str = "") -> list[str]:
    """Where ``delivered`` holds something the API's ``read`` does not (or differs)."""
    if isinstance(delivered, dict):
        if not isinstance(read, dict):
            return [f"{where}: not an object in the API"]
        return [problem for key, value in delivered.items()
                for problem in ([f"{where}.{key}: not in the API"] if key not in read
                                else sub_structure(value, read[key], f"{where}.{key}"))]
    if isinstance(delivered, list):
        if not isinstance(read, list) or len(read) != len(delivered):
            return [f"{where}: a list of another length in the API"]
        return [p for i, (d, r) in enumerate(zip(delivered, read, strict=True))
                for p in sub_structure(d, r, f"{where}[{i}]")]
    return [] if delivered == read else [f"{where}: {delivered!r} != {read!r}"]


def test_a_tenants_adapter_delivery_is_its_api_read(hooks: Hooks, tmp_path: Path) -> None:
    c = hooks.container
    cases = tuple(f"turn:{stream_of(hooks, t)}:1" for t in ("acme", "globex", "globex"))
    c.evaluator().drain(timeout=60)
    theirs = [str(r.reward_id) for r in c.rewards.find(RewardQuery(tenant="globex"))]
    assert theirs
    port, out = free_port(), tmp_path / "got.jsonl"
    with receiver(port, out):
        hooks.subscribed("acme", f"http://127.0.0.1:{port}/", ["adapter.registered", "training.succeeded"])
        c.registry.register_base_model("tiny", fake_model_dir(tmp_path / "models" / "b"), "ops")
        firing = c.triggers.fire_manual("chat", "ops", "gate record", parent="root")
        adapter = fake_train(c, firing.run_id, metrics={"gate": gate_record(cases)},
                             selection=Selection(theirs, "0" * 64))
        got = wait_for(lambda: len(distinct(out)) >= 2 and distinct(out), 30, "not delivered")
    bodies = {g["body"]["type"]: g["body"]["data"]["payload"] for g in got}
    read = hooks.client.get(f"/v1/adapters/{adapter.adapter_id}", headers=hooks.keys["acme"]).json()
    assert sub_structure(bodies["adapter.registered"], {**read, "gate": read["metrics"]["gate"]}) == []
    text = out.read_text()
    leaks = [*cases, "new reply", "old reply", *theirs, str(c.settings.resolved_artifact_dir),
             "file://"]
    assert [leak for leak in leaks if leak in text] == []
    run = hooks.client.get(f"/v1/training-runs/{firing.run_id}", headers=hooks.keys["acme"]).json()
    assert bodies["training.succeeded"]["adapter_id"] == run["adapter_id"] == adapter.adapter_id


def test_a_publish_checks_samples_do_not_reach_a_tenant(hooks: Hooks, tmp_path: Path) -> None:
    c = hooks.container
    streams = [stream_of(hooks, t) for t in ("acme", "globex")]
    c.evaluator().drain(timeout=60)
    port, out = free_port(), tmp_path / "got.jsonl"
    with receiver(port, out):
        hooks.subscribed("acme", f"http://127.0.0.1:{port}/", ["contract.published"])
        draft = c.contracts.create_draft("default", contract_text(feedback=LEAKY), "ops", parent_version=1)
        _, check = c.publisher.publish("default", draft.version, "ops", True, "a leaky criterion")
        assert check is not None and check.samples  # the check quoted subjects and their text
        (got,) = wait_for(lambda: distinct(out), 30, "not delivered")
    payload = got["body"]["data"]["payload"]
    read = hooks.client.get(f"/v1/contracts/default/versions/{draft.version}",
                            headers=hooks.keys["acme"]).json()
    assert {k: payload[k] for k in ("name", "version", "content_hash")} == \
        {k: read[k] for k in ("name", "version", "content_hash")}
    text = json.dumps(got["body"])
    assert [s for s in streams if s in text] == []
