from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from contract.document import parse_contract
from tests.unit.trainer_core.factories import HOUSE_CONTRACT
from trainer.policy import (
    DISABLED,
    ROOT,
    GatePolicy,
    NothingToTrain,
    SpecialistState,
    TriggerPolicy,
    decide,
    manual,
    policy_from_contract,
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
    policy = TriggerPolicy(schedule="every 1h")
    assert decide(policy, state(last_fired_at=NOW - timedelta(minutes=59))) is None
    decision = decide(policy, state(last_fired_at=NOW - timedelta(hours=1)))
    assert decision is not None and decision.policy == "schedule"
    assert decide(policy, state(last_fired_at=None)) is not None


def test_cron_schedule_fires_once_past_its_tick():
    policy = TriggerPolicy(schedule="0 * * * *")  # on the hour; NOW is 12:00
    assert decide(policy, state(last_fired_at=NOW - timedelta(minutes=30))) is not None
    assert decide(policy, state(last_fired_at=NOW)) is None


def test_nothing_fires_without_new_data_or_when_disabled():
    assert decide(TriggerPolicy(min_new_rewards=1, reward_floor=1.0, reward_window=1,
                                schedule="every 1m"), state(new_eligible=0)) is None
    assert decide(TriggerPolicy(enabled=False, min_new_rewards=1), state()) is None


def test_same_state_gives_the_same_work_key():
    policy = TriggerPolicy(min_new_rewards=5)
    assert decide(policy, state()) == decide(policy, state())
    assert state().parent_key == "coding@2" and state(parent_adapter_id=None).parent_key == ROOT


def test_manual_fires_on_any_eligible_data_but_not_on_none():
    decision = manual(DISABLED, state(new_eligible=0), "hotfix")
    assert decision.policy == "manual" and decision.reason == "hotfix" and decision.dataset_cut == 150
    with pytest.raises(NothingToTrain):
        manual(DISABLED, state(eligible_head=0, new_eligible=0), "x")


def test_policy_from_a_contracts_training_triggers():
    doc = parse_contract(HOUSE_CONTRACT)
    coding = policy_from_contract(doc, "coding", "house")
    chat = policy_from_contract(doc, "chat", "house")
    assert policy_from_contract(doc, "genui", "house") is None
    assert coding.min_new_rewards == 3 and coding.contract == "house" and coding.base_model == "tiny"
    assert coding.gate.auto_promote and coding.gate.margin == 0.01 and coding.gate.alias == "prod"
    assert coding.gate.tolerance_for("quality") == 0.05 and coding.gate.tolerance_for("style") is None
    assert chat.schedule == "every 6h" and chat.reward_floor == 0.4 and chat.reward_window == 20
    assert chat.gate.alias == "production"


def test_a_contract_can_ask_for_the_rollout_gate():
    assert policy_from_contract(parse_contract(HOUSE_CONTRACT), "coding", "house").gate.metric == "offline"
    doc = parse_contract(HOUSE_CONTRACT.replace(
        "gate_margin = 0.01\n", 'gate_margin = 0.01\ngate_metric = "rollout"\nrollout_max_new_tokens = 8\n'))
    gate = policy_from_contract(doc, "coding", "house").gate
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
