"""`hcp demo --stack` on the tiny model: PostgreSQL, Kafka and Redis, with `hcp serve`,
`hcp relay`, `hcp evaluator` and `hcp trainer` as separate processes and the harness's
turns answered by the server's chat endpoint. Small sizes: one specialist, one generation
and a contract v2."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

pytest.importorskip("peft")
pytestmark = [pytest.mark.postgres, pytest.mark.kafka, pytest.mark.redis, pytest.mark.train,
              pytest.mark.slow]
BIN = Path(sys.executable).parent


def test_the_demo_runs_against_the_stack_with_separate_processes(postgres_url, kafka_bootstrap,
                                                                  redis_url, tmp_path):
    broker = make_url(redis_url).set(database=str(random.randint(1, 15)))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HCP_")},
           "HCP_DATABASE_URL": postgres_url, "HCP_KAFKA_BOOTSTRAP": kafka_bootstrap,
           "HCP_REDIS_URL": broker.render_as_string(hide_password=False),
           "HCP_TOPIC_PREFIX": f"demo{uuid.uuid4().hex[:8]}", "HCP_DATA_DIR": str(tmp_path / "data")}
    run = subprocess.run(
        [str(BIN / "hcp"), "demo", "--stack", "--model", "tiny", "--specialists", "coding",
         "--generations", "2", "--train-tasks", "2", "--held-out", "4", "--eval-tasks", "2", "--k", "2",
         "--v2-after", "1", "--out", str(tmp_path / "out")],
        env=env, capture_output=True, text=True, timeout=900)
    out = run.stdout + run.stderr
    logs = tmp_path / "data" / "stack-logs"
    assert run.returncode == 0, out[-3000:] + "".join(
        f"\n--- {p.name}\n{p.read_text()[-1500:]}" for p in sorted(logs.glob("*.log")))
    assert "published harness@2" in out and "hash chain intact" in out
    report = json.loads((tmp_path / "out" / "demo-report.json").read_text())
    assert [g["specialist"] for g in report["generations"]] == ["coding", "coding"]
    assert all(g["interval"]["n"] == 4 for g in report["generations"])
    assert {p.name for p in logs.glob("*.log")} == {"serve.log", "relay.log", "evaluator.log",
                                                    "trainer.log"}
    served = (logs / "serve.log").read_text()
    assert "POST /v1/chat/completions" in served  # the server answered the harness's turns
    assert "POST /v1/events" in served  # and the harness posted what each answer did
