"""The demo's loop on the tiny model, on SQLite and PostgreSQL: the harness serves through
the ingest path, the contract scores the checks, runs train on the manifest's best answers
and the gate records its interval; contract v2 re-scores history; the served adapter is
resolved through the registry and loaded beside the base."""

from __future__ import annotations

import io
import json
from collections import Counter

import pytest
from rich.console import Console
from sqlalchemy import select

from cli.demo_run import ACTOR, CONTRACT, DemoConfig, run_demo
from cli.registry import gate_summary
from evaluators.tables import reward_records
from tests.unit.trainer_core.fixtures import make_container

pytest.importorskip("peft")
pytestmark = [pytest.mark.train, pytest.mark.slow]

CONFIG = DemoConfig(model="tiny", specialists=("coding", "genui"), generations=2, train_tasks=3,
                    held_out=4, eval_tasks=3, k=2, v2_after=1)


@pytest.fixture
def demo(database_url, tmp_path):
    container = make_container(database_url, tmp_path)
    quiet = Console(file=io.StringIO(), width=150)
    report = run_demo(container, DemoConfig(**{**CONFIG.__dict__, "out_dir": tmp_path / "out"}), quiet)
    yield container, report, tmp_path / "out"
    container.close()


def served(container, kind: str) -> list:
    return list(container.store.read_types([kind], 0, 100_000))


def test_the_loop_runs_through_ingest_scoring_training_and_the_gate(demo):
    container, report, out = demo
    assert report["chain_intact"] and len(report["generations"]) == 4
    routes = served(container, "route.decided")
    assert {(r.payload["specialist"], r.payload["adapter_version"]) for r in routes} == \
        {("coding", "coding@0"), ("genui", "genui@0")}  # tiny successors never pass their gate
    assert Counter(r.payload["contract"] for r in routes) == {f"{CONTRACT}@1": 2 * (4 + 3 * 2),
                                                              f"{CONTRACT}@2": 2 * 3 * 2}
    tools = Counter(e.payload["tool"] for e in served(container, "tool.called"))
    assert set(tools) == {"python.run", "ui.render"}
    assert len(served(container, "x.check")) == 2 * (4 + 2 * 3 * 2)
    for row in report["generations"]:
        gate = container.registry.adapter(row["adapter_id"]).metrics["gate"]
        assert gate["test"] == "bootstrap" and gate["samples"] == 4 and gate["seed"] == 0
        assert gate["interval"]["n"] == 4 and gate["rollouts"]["harness"] == "tasks"
        assert any("n=4" in line and "seed 0" in line for line in gate_summary(gate))
        assert row["promoted"] is (gate["interval"]["low"] > 0)
    with container.engine.connect() as conn:
        versions = Counter(v for (v,) in conn.execute(select(reward_records.c.contract_version)))
    assert versions[2] >= versions[1] - 2 * 3 * 2  # history re-scored under v2
    data = json.loads((out / "demo-report.json").read_text())
    assert set(data["specialists"]) == {"coding", "genui"}
    assert len(data["specialists"]["coding"]["production_by_generation"]) == 3
    coding = data["specialists"]["coding"]
    assert len(coding["pass_rate_by_generation"]) == 3  # the checks' verdict beside the reward
    assert coding["evaluation"]["n"] == 3 and len(coding["evaluation"]["pass_rate_by_generation"]) == 3
    # every successor on the evaluation set, whatever its gate decided
    assert [s["generation"] for s in coding["evaluation"]["successors"]] == [1, 2]
    assert set(coding["probes_by_generation"]) == {"general", "unseen_templates", "retention"}
    assert data["environment"]["torch_threads"] >= 1 and data["environment"]["libraries"]["torch"]
    gate = container.registry.adapter(report["generations"][0]["adapter_id"]).metrics["gate"]
    assert set(gate["non_inferiority"]["sets"]) == {"general", "unseen_templates", "retention"}
    assert gate["non_inferiority"]["sets"]["general"]["n"] == 6 and gate["by_group"]
    assert gate["non_inferiority"]["power"] == 0.8 and gate["power"]["n"] == 4
    assert all(0 <= row["pass_if_equal"] <= 1 for row in gate["non_inferiority"]["sets"].values())
    first = data["generations"][0]
    assert first["objective"] == "sft" and first["init"] == "parent"
    assert first["answers_sampled"] == 3 * 2 and first["kl_from_base"] is not None
    training = container.registry.adapter(first["adapter_id"]).metrics["training"]
    assert training["kl_from_base"]["tokens"] > 0
    assert (out / "demo-chart.png").read_bytes()[:4] == b"\x89PNG"


def test_a_promoted_adapter_serves_through_the_registry_beside_the_base(demo):
    from cli.demo_run import Demo, build_harness
    from harness.tasks.catalog import held_out_tasks

    container, report, _ = demo
    coding = next(r for r in report["generations"] if r["specialist"] == "coding")
    container.registry.set_status(coding["adapter_id"], "promoted", ACTOR, "test", alias="production")
    harness = build_harness(Demo(container, CONFIG, Console(file=io.StringIO())), "hcp-tiny")
    task = held_out_tasks("coding", 1, lambda text: "held_out")[0]
    (answer,) = harness.serve([task])
    assert answer.adapter_version == f"coding@{coding['version']}"
    (pool,) = container.inference.pools.values()  # one base in this process: gates, harness
    digest = container.registry.adapter(coding["adapter_id"]).artifact_sha256
    assert pool.loaded[digest] == f"a{digest}"  # loaded beside the base, by hash
    decided = served(container, "route.decided")[-1]
    assert decided.payload["adapter_version"] == f"coding@{coding['version']}"
