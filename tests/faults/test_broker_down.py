"""Training while Redis is away: `hcp train start` says the run is queued and exits cleanly,
and the trainer worker itself sends it once Redis is back; a run whose worker died is
re-sent by the worker's beat too, with no `hcp triggers run` anywhere."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis as redis_client

from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.faults.conftest import PrivateRedis, wait_for
from tests.unit.trainer_core.factories import seed_contract, seed_dataset
from tests.unit.trainer_core.fixtures import fake_model_dir

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]
BIN = Path(sys.executable).parent


@pytest.fixture
def env(postgres_url: str, private_redis: PrivateRedis, tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "HCP_DATABASE_URL": postgres_url, "HCP_REDIS_URL": private_redis.url,
            "HCP_DATA_DIR": str(tmp_path), "HCP_KAFKA_BOOTSTRAP": ""}


@pytest.fixture
def parts(env: dict[str, str], tmp_path: Path) -> Iterator[Container]:
    settings = Settings(database_url=env["HCP_DATABASE_URL"], redis_url=env["HCP_REDIS_URL"],
                        data_dir=tmp_path, kafka_bootstrap="")
    container = Container(settings, make_engine(settings.database_url))
    digest = seed_contract(container.engine)
    seed_dataset(container.engine, container.store, "coding", contract=("default", 1, digest))
    # Not a loadable model: a delivered run fails at its first step, which is all we need
    # to see (the claim: the run reached a worker).
    container.registry.register_base_model("tiny", fake_model_dir(tmp_path / "models" / "tiny"), "t")
    yield container
    container.close()


def start_worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(BIN / "hcp"), "trainer", "--pool", "solo", "--redispatch-every", "1",
         "--requeue-after", "1", "--lease-seconds", "3", "--visibility-timeout", "6"],
        env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def test_a_run_started_while_redis_is_down_is_kept_and_sent_when_it_is_back(
        parts: Container, env: dict[str, str], private_redis: PrivateRedis, tmp_path: Path) -> None:
    started = subprocess.run([str(BIN / "hcp"), "train", "start", "--specialist", "coding"],
                             env=env, capture_output=True, text=True, timeout=120)
    output = started.stdout + started.stderr
    assert started.returncode == 0, output
    assert "Traceback" not in output and "unreachable" in output and "queued" in output
    [run] = parts.runs.recent("coding")
    assert (run.status, run.attempts) == ("queued", 0)

    private_redis.start()
    worker = start_worker(env, tmp_path / "worker.log")
    try:
        wait_for(lambda: parts.runs.get(run.run_id).attempts >= 1, 90, "the worker to claim the run")
    finally:
        stop(worker)
        print((tmp_path / "worker.log").read_text()[-3000:])


def test_a_run_whose_worker_died_is_re_sent_by_the_workers_beat(
        parts: Container, env: dict[str, str], private_redis: PrivateRedis, tmp_path: Path) -> None:
    private_redis.start()
    firing = parts.triggers.fire_manual("coding", "t", "by hand")
    # A worker claims it and dies: its lease runs out, and its message is gone from Redis
    # (acknowledged, or lost with the machine), so only a re-send brings the run back.
    assert parts.runs.claim(firing.run_id, "dead-worker", 1.0, 3).outcome == "claimed"
    redis_client.Redis.from_url(private_redis.url).flushdb()

    worker = start_worker(env, tmp_path / "worker.log")
    try:
        wait_for(lambda: parts.runs.get(firing.run_id).attempts >= 2, 90,
                 "the worker's beat to re-send the run and a worker to claim it again")
    finally:
        stop(worker)
        print((tmp_path / "worker.log").read_text()[-3000:])
