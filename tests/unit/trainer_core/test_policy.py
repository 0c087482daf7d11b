from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from contract.document import parse_contract
from contract.policy import TriggerPolicy
from tests.unit.trainer_core.factories import HOUSE_CONTRACT
from trainer.gate.policy import GatePolicy
from trainer.triggers.policy import (
    NO_POLICY,
    ROOT,
    NothingToTrain,
    Policy,
    SpecialistState,
    decide,
    manual,
    policy_from_contract,
    resolve,
)
from trainer.triggers.sources import stored_rule

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def P(**rule) -> Policy:  # noqa: N802 (reads like the document it wraps)
    """A policy set through the API, resolved."""
    return resolve(TriggerPolicy(**rule))


def state(**overrides) -> SpecialistState:
    values = dict(specialist="coding", parent_adapter_id="coding@2", parent_cut=100,
                  eligible_head=150, new_eligible=50, production_mean=0.8, production_count=60,
                  last_fired_at=None, now=NOW)
    values.update(overrides)
    return SpecialistState(**values)


def test_count_rule_fires_at_threshold_with_the_cut_and_the_reason():
    decision = decide(P(min_new_rewards=50), state())
    assert decision is not None
    assert decision.policy == "count" and decision.dataset_cut == 150 and decision.cut_from == 0
    assert "50 new subjects with eligible rewards since the last run on coding@2" in decision.reason


def test_count_rule_stays_quiet_below_threshold():
    assert decide(P(min_new_rewards=51), state()) is None


def test_since_parent_dataset_starts_after_the_parents_cut():
    decision = decide(P(min_new_rewards=1, dataset="since_parent"), state())
    assert decision is not None and decision.cut_from == 100


def test_drift_rule_needs_a_full_window_below_the_floor():
    policy = P(min_new_rewards=None, reward_floor={"threshold": 0.9, "window": 60})
    decision = decide(policy, state())
    assert decision is not None and decision.policy == "drift"
    assert "0.8000" in decision.reason and "below 0.9" in decision.reason
    assert decide(policy, state(production_count=59)) is None
    assert decide(policy, state(production_mean=0.95)) is None


def test_schedule_rule_fires_when_due_and_not_before():
    policy = P(schedule="every 1h")
    assert decide(policy, state(last_fired_at=NOW - timedelta(minutes=59))) is None
    decision = decide(policy, state(last_fired_at=NOW - timedelta(hours=1)))
    assert decision is not None and decision.policy == "schedule"
    assert decide(policy, state(last_fired_at=None)) is not None


def test_cron_schedule_fires_once_past_its_tick():
    policy = P(schedule="0 * * * *")  # on the hour; NOW is 12:00
    assert decide(policy, state(last_fired_at=NOW - timedelta(minutes=30))) is not None
    assert decide(policy, state(last_fired_at=NOW)) is None


def test_nothing_fires_without_new_data_or_when_disabled():
    assert decide(P(min_new_rewards=1, reward_floor={"threshold": 1.0, "window": 1},
                     schedule="every 1m"), state(new_eligible=0)) is None
    assert decide(P(enabled=False, min_new_rewards=1), state()) is None


def test_same_state_gives_the_same_work_key():
    policy = P(min_new_rewards=5)
    assert decide(policy, state()) == decide(policy, state())
    assert state().parent_key == "coding@2" and state(parent_adapter_id=None).parent_key == ROOT


def test_manual_fires_on_any_eligible_data_but_not_on_none():
    decision = manual(NO_POLICY, state(new_eligible=0), "hotfix")
    assert decision.policy == "manual" and decision.reason == "hotfix" and decision.dataset_cut == 150
    with pytest.raises(NothingToTrain):
        manual(NO_POLICY, state(eligible_head=0, new_eligible=0), "x")


def test_policy_from_a_contracts_training_triggers():
    doc = parse_contract(HOUSE_CONTRACT)
    coding = policy_from_contract(doc, "coding", "house@1")
    chat = policy_from_contract(doc, "chat", "house@1")
    assert policy_from_contract(doc, "genui", "house@1") is None
    assert coding.rule.min_new_rewards == 3 and coding.contract == "house" and coding.base_model == "tiny"
    assert coding.source == "contract:house@1"
    assert coding.gate.auto_promote and coding.gate.margin == 0.01 and coding.gate.alias == "prod"
    assert coding.gate.tolerance_for("quality") == 0.05 and coding.gate.tolerance_for("style") is None
    assert chat.rule.schedule == "every 6h" and chat.rule.reward_floor.threshold == 0.4
    assert chat.reward_window == 20 and chat.gate.alias == "production"


def test_a_contract_can_ask_for_the_rollout_gate():
    assert policy_from_contract(parse_contract(HOUSE_CONTRACT), "coding", "house@1").gate.metric == "offline"
    doc = parse_contract(HOUSE_CONTRACT.replace(
        "gate_margin = 0.01\n", 'gate_margin = 0.01\ngate_metric = "rollout"\nrollout_max_new_tokens = 8\n'))
    gate = policy_from_contract(doc, "coding", "house@1").gate
    assert (gate.metric, gate.rollout_max_new_tokens, gate.rollout_harness) == ("rollout", 8, "text")
    with pytest.raises(ValidationError):
        GatePolicy(metric="online")


def test_invalid_policies_are_refused():
    with pytest.raises(ValidationError):
        TriggerPolicy(min_new_rewards=0)
    with pytest.raises(ValidationError):
        TriggerPolicy(schedule="every tuesday")
    with pytest.raises(ValidationError):
        TriggerPolicy()  # enabled, but no rule could ever fire
    assert not TriggerPolicy(enabled=False).enabled


def test_the_api_takes_the_contracts_own_form_of_a_policy():
    rule = TriggerPolicy.model_validate_json('{"reward_floor": {"threshold": 0.5, "window": 50}}')
    assert rule.reward_floor is not None and rule.reward_floor.window == 50
    assert resolve(rule).reward_window == 50


def test_policies_stored_in_the_trainers_old_form_read_as_the_shared_schema():
    old = {"enabled": True, "min_new_rewards": None, "reward_floor": 0.4, "reward_window": 20,
           "schedule": None, "contract": None, "dataset": "all", "base_model": None, "hyper": {},
           "gate": {"margin": 0.02, "regression_tolerance": {"*": 0.1}, "auto_promote": True,
                    "alias": "prod", "metric": "offline", "rollout_harness": "text",
                    "rollout_max_new_tokens": 24, "rollout_prompts": 32}}
    policy = resolve(stored_rule(old), "api")
    assert policy.rule.reward_floor.threshold == 0.4 and policy.reward_window == 20
    assert (policy.gate.margin, policy.gate.alias, policy.gate.auto_promote) == (0.02, "prod", True)
    assert policy.gate.tolerance_for("anything") == 0.1


def test_rejected_runs_back_off_by_the_factor_per_rejection():
    policy = P(min_new_rewards=10)
    assert decide(policy, state(new_eligible=10, rejections=0)) is not None
    assert decide(policy, state(new_eligible=19, rejections=1)) is None
    fired = decide(policy, state(new_eligible=20, rejections=1))
    assert fired is not None and "threshold 20 after 1 rejected run(s)" in fired.reason
    assert decide(policy, state(new_eligible=39, rejections=2)) is None
    assert decide(P(min_new_rewards=10, backoff_factor=1.0), state(new_eligible=10, rejections=3))


def test_a_backoff_wait_holds_every_rule_until_it_has_passed():
    policy = P(min_new_rewards=1, schedule="every 1h", backoff_factor=1.0, backoff_wait="6h")
    recent = state(rejections=1, rejected_at=NOW - timedelta(hours=1))
    assert decide(policy, recent) is None
    assert decide(policy, state(rejections=1, rejected_at=NOW - timedelta(hours=7))) is not None
    with pytest.raises(ValidationError):
        TriggerPolicy(min_new_rewards=1, backoff_wait="soon")


def test_a_forced_manual_firing_says_so():
    assert manual(P(min_new_rewards=5), state(), "new margin", forced=True).policy == "forced"
