from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from trainer.policy import (
    ROOT,
    NothingToTrain,
    SpecialistState,
    TriggerPolicy,
    decide,
    manual,
    policy_from_training_section,
)

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def state(**overrides) -> SpecialistState:
    values = dict(specialist="coding", parent_adapter_id="coding@2", parent_cut=100,
                  eligible_head=150, new_eligible=50, production_mean=0.8, production_count=60,
                  last_fired_at=None, now=NOW)
    values.update(overrides)
    return SpecialistState(**values)


def test_count_rule_fires_at_threshold_with_the_cut_and_the_reason():
    decision = decide(TriggerPolicy(min_new_rewards=50), state())
    assert decision is not None
    assert decision.policy == "count" and decision.dataset_cut == 150 and decision.cut_from == 0
    assert "50 new eligible rewards since coding@2" in decision.reason


def test_count_rule_stays_quiet_below_threshold():
    assert decide(TriggerPolicy(min_new_rewards=51), state()) is None


def test_since_parent_dataset_starts_after_the_parents_cut():
    decision = decide(TriggerPolicy(min_new_rewards=1, dataset="since_parent"), state())
    assert decision is not None and decision.cut_from == 100


def test_drift_rule_needs_a_full_window_below_the_floor():
    policy = TriggerPolicy(min_new_rewards=None, reward_floor=0.9, reward_window=60)
    decision = decide(policy, state())
    assert decision is not None and decision.policy == "drift"
    assert "0.8000" in decision.reason and "below 0.9" in decision.reason
    assert decide(policy, state(production_count=59)) is None
    assert decide(policy, state(production_mean=0.95)) is None


def test_schedule_rule_fires_when_due_and_not_before():
    policy = TriggerPolicy(min_new_rewards=None, schedule_seconds=3600)
    assert decide(policy, state(last_fired_at=NOW - timedelta(minutes=59))) is None
    decision = decide(policy, state(last_fired_at=NOW - timedelta(hours=1)))
    assert decision is not None and decision.policy == "schedule"


def test_nothing_fires_without_new_data_or_when_disabled():
    assert decide(TriggerPolicy(min_new_rewards=1, reward_floor=1.0, reward_window=1,
                                schedule_seconds=1), state(new_eligible=0)) is None
    assert decide(TriggerPolicy(enabled=False, min_new_rewards=1), state()) is None


def test_same_state_gives_the_same_work_key():
    policy = TriggerPolicy(min_new_rewards=5)
    assert decide(policy, state()) == decide(policy, state())
    assert state().parent_key == "coding@2" and state(parent_adapter_id=None).parent_key == ROOT


def test_manual_fires_on_any_eligible_data_but_not_on_none():
    decision = manual(TriggerPolicy(), state(new_eligible=0), "hotfix")
    assert decision.policy == "manual" and decision.reason == "hotfix" and decision.dataset_cut == 150
    with pytest.raises(NothingToTrain):
        manual(TriggerPolicy(), state(eligible_head=0, new_eligible=0), "x")


def test_policy_from_a_contract_training_section_with_a_specialist_override():
    section = {"min_new_rewards": 200, "auto_promote": True, "promotion_margin": 0.05,
               "eligible_min_score": 0.3, "hyper": {"steps": 5},
               "coding": {"min_new_rewards": 20, "regression_tolerance": 0.01}}
    coding = policy_from_training_section(section, "coding", contract="default")
    chat = policy_from_training_section(section, "chat", contract="default")
    assert coding.min_new_rewards == 20 and chat.min_new_rewards == 200
    assert coding.gate.auto_promote and coding.gate.margin == 0.05 and coding.gate.tolerance == 0.01
    assert coding.hyper == {"steps": 5} and coding.contract == "default"


def test_invalid_policy_values_are_refused():
    with pytest.raises(ValidationError):
        TriggerPolicy(min_new_rewards=0)
    with pytest.raises(ValidationError):
        policy_from_training_section({"dataset": "everything"}, "chat")
