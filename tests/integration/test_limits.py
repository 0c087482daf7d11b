"""Bounded work on SQLite and PostgreSQL: contract size and criteria caps, dry-run budgets
and jobs, the models root, and a training run queued while the broker is unreachable."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from contract.checks import MAX_CRITERIA
from contract.document import MAX_DOCUMENT_BYTES
from evaluators.dryrun import DryRuns, Selection
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.unit.evaluators.factories import contract_text, conversation, publish
from tests.unit.trainer_core.fixtures import fake_model_dir


@pytest.fixture
def container(database_url: str, tmp_path: Path) -> Iterator[Container]:
    settings = Settings(database_url=database_url, kafka_bootstrap="", data_dir=tmp_path,
                        dry_run_wait_seconds=0)
    built = Container(settings, make_engine(database_url))
    yield built
    built.close()


@pytest.fixture
def ops(container: Container) -> dict[str, str]:
    return {"Authorization": f"Bearer {container.keys.create(['admin'], label='ops')}"}


def many_criteria(count: int) -> str:
    extra = "".join(f'\n[[evaluation.criteria]]\nid = "c{i}"\nweight = 1.0\nexpression = "1.0"\n'
                    for i in range(count - 2))
    return contract_text().replace("[training]", extra + "\n[training]")


def test_validate_refuses_too_many_criteria_and_too_large_documents(container, ops) -> None:
    with TestClient(create_app(container)) as client:
        capped = client.post("/v1/contracts/validate", json={"document": many_criteria(MAX_CRITERIA + 1)},
                             headers=ops)
        huge = client.post("/v1/contracts/validate",
                           json={"document": "#" * (MAX_DOCUMENT_BYTES + 1)}, headers=ops)
        fine = client.post("/v1/contracts/validate", json={"document": many_criteria(MAX_CRITERIA)},
                           headers=ops)
    assert (capped.status_code, capped.json()["error"]["field"]) == (422, "evaluation.criteria")
    assert huge.status_code == 422 and "limit" in huge.json()["error"]["message"]
    assert fine.status_code == 200


def test_a_dry_run_stops_at_its_time_budget_and_says_so(container) -> None:
    publish(container.contracts, contract_text())
    for _ in range(4):
        conversation(container.store, turns=2)
    draft = container.contracts.create_draft("default", contract_text(answered_weight=2.0), "t", 1)
    ticks = iter(range(100))
    runs = DryRuns(container.store, container.contracts, subject_budget_s=1.0, budget_s=3.5,
                   monotonic=lambda: float(next(ticks)))
    seen: list[tuple[int, int]] = []

    result = runs.run("default", draft.version, Selection(last=8),
                      on_progress=lambda done, total: seen.append((done, total)))

    # One tick to start, then one per subject: the fourth subject starts after 4 s.
    assert result.subjects == 3 and result.report.count == 3
    assert result.stopped is not None and "3 of 8" in result.stopped
    assert seen == [(1, 8), (2, 8), (3, 8)]


def test_a_large_dry_run_answers_202_and_is_polled_to_its_report(container, ops) -> None:
    publish(container.contracts, contract_text())
    for _ in range(3):
        conversation(container.store, turns=2)
    draft = container.contracts.create_draft("default", contract_text(answered_weight=2.0), "t", 1)
    with TestClient(create_app(container)) as client:
        started = client.post(f"/v1/contracts/default/versions/{draft.version}/dry-run",
                              json={"last": 6}, headers=ops)
        assert started.status_code == 202, started.text
        location = started.headers["Location"]
        job = started.json()["job"]
        assert job["status"] in ("queued", "running", "succeeded")
        deadline = time.monotonic() + 60
        while job["status"] not in ("succeeded", "failed") and time.monotonic() < deadline:
            time.sleep(0.1)
            job = client.get(location, headers=ops).json()
        missing = client.get("/v1/dry-runs/nope", headers=ops)
    assert job["status"] == "succeeded" and (job["done"], job["total"]) == (6, 6)
    assert job["progress"] == 1.0 and job["result"]["report"]["count"] == 6
    assert missing.status_code == 404


def test_base_models_come_from_the_models_root_only(container, ops, tmp_path) -> None:
    root = container.settings.resolved_models_dir
    fake_model_dir(root / "tiny")
    outside = fake_model_dir(tmp_path / "elsewhere")
    os.symlink(outside, root / "link")
    with TestClient(create_app(container)) as client:
        def register(name: str, path: str) -> tuple[int, str | None]:
            response = client.post("/v1/base-models", json={"name": name, "path": path}, headers=ops)
            return response.status_code, response.json().get("error", {}).get("field")

        assert register("tiny", "tiny")[0] == 201  # relative to the root
        assert register("tiny2", str(root / "tiny"))[0] == 201
        assert register("etc", "/etc") == (422, "path")
        assert register("up", "../elsewhere") == (422, "path")
        assert register("link", "link") == (422, "path")  # the symlink is followed, then refused
        assert register("abs", str(outside)) == (422, "path")


class DeadBroker:
    """A dispatcher whose broker is down until ``up`` is set."""

    def __init__(self) -> None:
        self.up, self.sent = False, []  # type: ignore[var-annotated]

    def dispatch(self, run_id: str) -> None:
        from trainer.runs.dispatch import DispatchFailed

        if not self.up:
            raise DispatchFailed("the broker is unreachable (test)")
        self.sent.append(run_id)


def test_a_run_queued_while_the_broker_is_down_goes_out_when_it_is_back(database_url, tmp_path) -> None:
    from tests.unit.trainer_core.factories import seed_contract, seed_dataset
    from tests.unit.trainer_core.fixtures import make_container

    broker = DeadBroker()
    parts = make_container(database_url, tmp_path, broker)
    digest = seed_contract(parts.engine)
    seed_dataset(parts.engine, parts.store, "coding", contract=("default", 1, digest))
    parts.registry.register_base_model("tiny", fake_model_dir(tmp_path / "base"), "t")

    firing = parts.triggers.fire_manual("coding", "t", "by hand")
    assert firing.created and not firing.dispatched
    assert parts.runs.get(firing.run_id).status == "queued"
    assert parts.triggers.redispatch(queued_for=0) == []  # still down: nothing sent, no error

    broker.up = True
    assert parts.triggers.redispatch(queued_for=0) == [firing.run_id]
    assert broker.sent == [firing.run_id]
    parts.close()
