"""The tenant matrix for derived data, on SQLite and PostgreSQL: what each scope and tenant
sees of stored comparisons, error messages, re-evaluation jobs, the gate record and
/metrics (docs/security.md, "What each scope sees").

Error messages of a rubric can quote event text (``no such key: '<payload text>'``), so
they are shown whole only to a key that may read the subject's events; the gate's
per-case answers and held-out subject ids only to operators with ``events:read``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration import tenant_world
from tests.integration.tenant_world import World
from tests.unit.evaluators.factories import contract_text, publish
from tests.unit.trainer_core.fixtures import fake_model_dir, fake_train
from trainer.gate.decision import judge_rollouts
from trainer.gate.policy import GatePolicy
from trainer.gate.rollout import RolloutMetrics

world = tenant_world.world
# A criterion whose error quotes the assistant's text: a map lookup by that text.
LEAKY = "{'x': 1.0}[events[1].payload.text]"


def get(world: World, who: str, url: str, status: int = 200) -> Any:
    response = world.client.get(url, headers=world.as_(who))
    assert response.status_code == status, response.text
    return response.json()


@pytest.fixture
def leaky(world: World) -> World:
    """default@2 publishes a criterion that errors on every subject, quoting its text."""
    publish(world.container.contracts, contract_text(feedback=LEAKY), parent=1)
    world.container.evaluator().drain(timeout=60)
    return world


def texts_of(world: World, *tenants: str) -> list[str]:
    """What the assistant said in these tenants' streams (``a0 of <stream>``)."""
    return [f"of {world.streams[t]}" for t in tenants]


def test_a_comparison_covers_the_keys_tenant_only(world: World) -> None:
    publish(world.container.contracts, contract_text(answered_weight=3.0), parent=1)
    world.container.evaluator().drain(timeout=60)
    url = "/v1/contracts/default/compare?a=1&b=2&last=100&top=100"

    acme = get(world, "acme-compare", url)["report"]
    everyone = get(world, "ops", url)["report"]
    assert {m["subject_id"].split(":")[1] for m in acme["largest_movers"]} == {world.streams["acme"]}
    assert (acme["count"], everyone["count"]) == (2, 6)
    # The comparison is a view of stored rewards: contracts:read alone does not show it.
    get(world, "acme-contracts", url, status=403)


def test_reward_errors_quote_event_text_only_to_keys_that_read_the_events(leaky: World) -> None:
    def errors(who: str) -> list[dict[str, str]]:
        found = get(leaky, who, "/v1/rewards?contract=default@2&limit=5000")["rewards"]
        assert found and all(r["errors"] for r in found)
        return [e for r in found for e in r["errors"]]

    for who in ("acme-rewards", "ops-rewards"):
        shown = errors(who)
        assert {(e["item"], e["kind"]) for e in shown} == {("criterion:feedback", "runtime")}
        assert not any(text in e["message"] for e in shown for text in texts_of(leaky, "acme", "globex"))
    assert any(texts_of(leaky, "acme")[0] in e["message"] for e in errors("acme-r"))
    one = get(leaky, "acme-rewards", "/v1/rewards?contract=default@2")["rewards"][0]
    alone = get(leaky, "acme-rewards", f"/v1/rewards/{one['reward_id']}")
    assert texts_of(leaky, "acme")[0] not in str(alone["errors"])


def test_compare_error_samples_are_the_tenants_and_quote_only_to_readers(leaky: World) -> None:
    url = "/v1/contracts/default/compare?a=1&b=2&last=100"
    without = get(leaky, "acme-compare", url)["report"]["error_samples"]
    reader = get(leaky, "acme-r", url)["report"]["error_samples"]

    assert without and reader
    assert {s["subject_id"].split(":")[1] for s in without + reader} == {leaky.streams["acme"]}
    assert not any(t in str(without) for t in texts_of(leaky, "acme", "globex"))
    assert texts_of(leaky, "acme")[0] in str(reader)
    assert not any(t in str(reader) for t in texts_of(leaky, "globex", "ops-globex"))


def test_reevaluation_job_errors_quote_no_tenants_text(leaky: World) -> None:
    url = "/v1/contracts/default/versions/2/reevaluation"
    shared = get(leaky, "acme-contracts", url)["jobs"]
    operator = get(leaky, "ops", url)["jobs"]

    assert shared and all(j["error"] for j in shared)
    assert "criterion:feedback" in shared[0]["error"]
    assert not any(t in str(shared) for t in texts_of(leaky, "acme", "globex", "ops-globex"))
    # An operator key that may read every tenant's events sees the sample as stored.
    assert any(t in str(operator) for t in texts_of(leaky, "acme", "globex", "ops-globex"))


def rollout_metrics(world: World, rewards: tuple[float, ...], answer: str) -> RolloutMetrics:
    cases = tuple(f"turn:{world.streams[t]}:1" for t in ("acme", "globex", "ops-globex"))
    return RolloutMetrics(
        mean_reward=sum(rewards) / len(rewards), n=len(rewards), errors=0,
        per_criterion={"answered": 1.0}, error_samples=(f"criterion:x: no such key: '{cases[1]}'",),
        responses_sha256="0" * 64, rewards=rewards, cases=cases,
        answers=tuple(f"{answer} for {case}" for case in cases))


def rollout_gate(world: World) -> dict[str, Any]:
    """A rollout gate record as ``trainer.gate.heldout`` writes it."""
    ours, theirs = (rollout_metrics(world, (1.0, 1.0, 0.0), "new reply"),
                    rollout_metrics(world, (0.0, 1.0, 0.0), "old reply"))
    policy = GatePolicy(metric="rollout", test="bootstrap", seed=7, resamples=200)
    return {**judge_rollouts(ours, theirs, policy), "metric": "rollout", "parent_is_base": True,
            "held_out": 3, "successor": {"rollout_reward": ours.mean_reward, "n_rollouts": 3},
            "parent": {"rollout_reward": theirs.mean_reward, "n_rollouts": 3},
            "rollouts": {"successor": ours.to_dict(), "parent": theirs.to_dict(), "harness": "text",
                         "max_new_tokens": 24, "precision": "auto", "logged_mean_reward": 0.5},
            "offline": None}


@pytest.fixture
def adapter(world: World, tmp_path: Any) -> str:
    container = world.container
    container.registry.register_base_model("hcp-tiny", fake_model_dir(tmp_path / "models" / "b"), "t")
    firing = container.triggers.fire_manual("chat", "t", "gate record", parent="root")
    return fake_train(container, firing.run_id, metrics={"gate": rollout_gate(world)}).adapter_id


def test_the_gate_record_is_a_summary_for_every_registry_reader(world: World, adapter: str) -> None:
    held_out = [f"turn:{world.streams[t]}:1" for t in ("acme", "globex", "ops-globex")]
    for who in ("acme-r", "ops-registry"):
        for body in (get(world, who, f"/v1/adapters/{adapter}"),
                     *get(world, who, "/v1/adapters?specialist=chat")):
            text = str(body)
            assert not any(case in text for case in held_out) and "reply" not in text, who
            gate = body["metrics"]["gate"]
            assert gate["seed"] == 7 and gate["interval"]["n"] == 3
            assert gate["comparison"]["rollout_reward"]["delta"] == pytest.approx(1 / 3)
            assert gate["rollouts"]["successor"]["mean_reward"] == pytest.approx(2 / 3)
            assert gate["rollouts"]["successor"]["per_criterion"] == {"answered": 1.0}
            assert gate["rollouts"]["cases"] == {"count": 3}
    promoted = world.client.post(f"/v1/adapters/{adapter}/promote", json={"reason": "by hand"},
                                 headers=world.as_("ops"))
    assert promoted.status_code == 200 and "reply" not in promoted.text


def test_the_gate_cases_are_paged_for_operators_that_read_events(world: World, adapter: str) -> None:
    url = f"/v1/adapters/{adapter}/gate/samples"
    for who in ("acme-r", "acme-admin", "ops-registry"):
        get(world, who, url, status=403)
    first = get(world, "ops", f"{url}?limit=2")
    rest = get(world, "ops", f"{url}?after={first['next_after']}&limit=2")

    assert first["total"] == 3 and [c["index"] for c in first["cases"]] == [0, 1]
    assert [c["index"] for c in rest["cases"]] == [2] and rest["next_after"] is None
    case = first["cases"][1]
    assert case["subject_id"] == f"turn:{world.streams['globex']}:1"
    assert case["successor"] == {"answer": f"new reply for {case['subject_id']}", "reward": 1.0}
    assert case["parent"]["reward"] == 1.0
    assert first["error_samples"]["successor"]
    get(world, "ops", "/v1/adapters/chat@99/gate/samples", status=404)


def test_metrics_need_an_operator_key_that_may_read_them(world: World) -> None:
    container = world.container
    metrics = {"Authorization": f"Bearer {container.keys.create(['metrics:read'], label='prom')}"}
    tenant = {"Authorization": "Bearer " + container.keys.create(["metrics:read"], tenant="acme")}

    assert world.client.get("/metrics").status_code == 401
    assert world.client.get("/metrics", headers=tenant).status_code == 403
    assert world.client.get("/metrics", headers=world.as_("ops-registry")).status_code == 403
    scraped = world.client.get("/metrics", headers=metrics)
    assert scraped.status_code == 200 and "hcp_log_head_position" in scraped.text


def test_the_publish_check_quotes_no_event_text_to_a_key_without_events_read(world: World) -> None:
    writer = {"Authorization": "Bearer " + world.container.keys.create(["contracts:write"], "author")}
    draft = world.container.contracts.create_draft("default", contract_text(feedback=LEAKY), "t", 1)
    url = f"/v1/contracts/default/versions/{draft.version}/publish"
    texts = texts_of(world, "acme", "globex", "ops-globex")

    refused = world.client.post(url, headers=writer)
    assert refused.status_code == 409 and "criterion:feedback" in refused.json()["error"]["message"]
    assert not any(t in refused.text for t in texts)
    forced = world.client.post(url, json={"force": True, "reason": "known"}, headers=writer)
    assert forced.status_code == 200 and forced.json()["check"]["samples"]
    assert not any(t in forced.text for t in texts)
