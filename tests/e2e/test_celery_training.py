"""Training through a real Redis broker and real `hcp trainer` Celery worker processes.

Each test gets its own PostgreSQL database and its own Redis database number, so runs of
the suite (and other tests) never share a queue.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from sqlalchemy import select
from sqlalchemy.engine import make_url

from contract.policy import TriggerPolicy
from events.tables import events
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.unit.trainer_core.factories import seed_contract, seed_dataset, seed_reward, tiny_base

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.train, pytest.mark.slow]
BIN = Path(sys.executable).parent
HYPER = {"steps": 20, "rank": 4, "alpha": 8, "learning_rate": 5e-3, "max_len": 64}
VISIBILITY, LEASE = 6, 3  # seconds: short, so a killed worker's run comes back quickly


@pytest.fixture
def broker(redis_url: str) -> Iterator[str]:
    url = make_url(redis_url).set(database=str(random.randint(1, 15)))
    rendered = url.render_as_string(hide_password=False)
    client = redis.Redis.from_url(rendered)
    client.flushdb()
    yield rendered
    client.flushdb()
    client.close()


@pytest.fixture
def env(postgres_url: str, broker: str, tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "HCP_DATABASE_URL": postgres_url, "HCP_REDIS_URL": broker,
            "HCP_DATA_DIR": str(tmp_path), "HCP_KAFKA_BOOTSTRAP": "",
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


@pytest.fixture
def parts(env: dict[str, str], tmp_path: Path) -> Iterator[Container]:
    settings = Settings(database_url=env["HCP_DATABASE_URL"], redis_url=env["HCP_REDIS_URL"],
                        data_dir=tmp_path, kafka_bootstrap="")
    container = Container(settings=settings, engine=make_engine(settings.database_url))
    p = container  # dispatches to Celery: settings.redis_url is set
    digest = seed_contract(p.engine)
    seed_dataset(p.engine, p.store, "coding", contract=("default", 1, digest))
    p.registry.register_base_model("tiny", tiny_base(tmp_path / "tiny"), "e2e")
    yield p
    container.close()


@pytest.fixture
def start_worker(env: dict[str, str], tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen]]:
    workers: list[subprocess.Popen] = []

    def start(name: str, pool: str = "solo") -> subprocess.Popen:
        log = (tmp_path / f"{name}.log").open("w")
        proc = subprocess.Popen(
            [str(BIN / "hcp"), "trainer", "--pool", pool, "--loglevel", "info",
             "--visibility-timeout", str(VISIBILITY), "--lease-seconds", str(LEASE)],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        workers.append(proc)
        return proc

    yield start
    for proc in workers:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
    for log in sorted(tmp_path.glob("worker*.log")):
        print(f"--- {log.name}\n{log.read_text()[-4000:]}")


def wait_for(check: Callable[[], object], timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def finished(parts: Container, run_id: str) -> Callable[[], bool]:
    return lambda: parts.runs.get(run_id).finished


def run_events(parts: Container, run_id: str) -> list:
    return parts.store.read_stream(f"training_run:{run_id}")


def test_a_trigger_fires_once_and_the_worker_trains_registers_and_chains(parts, env, start_worker):
    parts.policies.configure("coding", TriggerPolicy(min_new_rewards=4, hyper=HYPER,
                                                     auto_promote=True), "e2e")
    # Two trigger processes evaluating at once: one run, one task.
    evaluators = [subprocess.Popen([str(BIN / "hcp"), "triggers", "evaluate"], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                  for _ in range(2)]
    outputs = [p.communicate(timeout=120)[0] for p in evaluators]
    assert all(p.returncode == 0 for p in evaluators), outputs
    runs = parts.runs.recent("coding")
    assert len(runs) == 1 and len(parts.triggers.firings("coding")) == 1
    run_id = runs[0].run_id
    assert sum("fired" in out and run_id in out for out in outputs) == 1  # one fired ...
    # ... and the other, counting new data from that run's cut, found nothing new
    assert sum(bool(re.search(r"coding\s+-\s+not due: 0 new subjects", out)) for out in outputs) == 1

    start_worker("worker-a", pool="prefork")  # the default pool: tasks run in a child
    wait_for(finished(parts, run_id), 120, "the root run")
    run = parts.runs.get(run_id)
    assert run.status == "succeeded", run.error
    root = parts.registry.adapter(run.adapter_id)
    assert [e.type for e in run_events(parts, run_id)] == [
        "training.queued", "training.started", "training.succeeded"]

    for i in range(4):
        seed_reward(parts.engine, parts.store, "coding", f"Say hello politely. #{i + 10}",
                    "Hello! How can I help you today?", 1.0, contract=("default", 1,
                                                                       root.contract_versions[0].content_hash))
    if root.status == "promoted":
        assert parts.aliases.at("coding", "production").adapter_id == root.adapter_id
    else:  # the gate said no; promotion by hand is always possible
        parts.registry.set_status(root.adapter_id, "promoted", "e2e", "by hand", "production")
    fired = next(r.fired for r in parts.triggers.evaluate() if r.fired)
    assert fired.parent_key == root.adapter_id
    wait_for(finished(parts, fired.run_id), 120, "the successor run")
    child_run = parts.runs.get(fired.run_id)
    assert child_run.status == "succeeded", child_run.error
    child = parts.registry.adapter(child_run.adapter_id)
    assert child.parent_adapter_id == root.adapter_id and child.base_model == "tiny"
    assert child.training_run_id == fired.run_id and child.manifest_id == child_run.manifest_id
    assert [c.name for c in child.contract_versions] == ["default"]
    assert {"rank", "alpha", "target_modules", "learning_rate", "steps", "seed"} <= set(child.hyper)
    assert child.metrics["initialised_from"] == {"adapter_id": root.adapter_id,
                                                 "artifact_sha256": root.artifact_sha256}
    # It started where the parent ended, not from a fresh LoRA: its first loss is the
    # parent's trained loss, well below the root's first (untrained) loss.
    assert child.metrics["training"]["loss_first"] < root.metrics["training"]["loss_first"] - 0.1
    assert "comparison" in child.metrics["gate"] and child.status in ("promoted", "candidate", "rejected")
    chain = parts.lineage.chain(child.adapter_id, deep=True)
    assert [link["adapter_id"] for link in chain] == [child.adapter_id, root.adapter_id]
    assert all(link["verified"] for link in chain)


def test_a_worker_killed_mid_run_registers_nothing_and_the_run_is_retried(parts, start_worker):
    slow = {**HYPER, "steps": 400}
    parts.policies.configure("coding", TriggerPolicy(min_new_rewards=4, hyper=slow), "e2e")
    run_id = parts.triggers.fire_manual("coding", "e2e", "kill test").run_id
    first = start_worker("worker-a")
    wait_for(lambda: parts.runs.get(run_id).step >= 1, 120, "training to start")
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(10)
    dead = parts.runs.get(run_id)
    assert dead.status == "running" and dead.step < 400 and dead.attempts == 1
    assert parts.registry.adapters("coding") == []

    start_worker("worker-b")  # the unacknowledged task comes back after the visibility timeout
    wait_for(finished(parts, run_id), 180, "the retried run")
    run = parts.runs.get(run_id)
    assert run.status == "succeeded", run.error
    assert run.attempts == 2 and run.step == 400
    started = [e for e in run_events(parts, run_id) if e.type == "training.started"]
    assert len(started) == 2 and started[1].payload["taken_over_from"] == dead.lease_owner
    assert [a.training_run_id for a in parts.registry.adapters("coding")] == [run_id]
    with parts.engine.connect() as conn:
        registered = conn.execute(select(events.c.type).where(
            events.c.type == "adapter.registered")).all()
    assert len(registered) == 1
