"""Every field of every subscribable event is named by its topic's view (a new field is sent
to nobody until someone decides who may see it), and the views keep from a tenant what the
API keeps from it."""

from __future__ import annotations

import pytest

from integrations.webhooks.topics import TOPICS, viewer

TENANT = viewer("s1", "acme", ("adapter.registered", "contract.published", "training.failed"))
OPERATOR = viewer("s2", None, ("adapter.registered", "contract.published", "training.failed"))


@pytest.mark.parametrize("name", sorted(TOPICS))
def test_every_field_of_the_event_is_decided(name: str) -> None:
    topic = TOPICS[name]
    assert topic.view.fields == set(topic.event.model_fields), name


def test_a_field_nobody_decided_on_is_not_sent() -> None:
    payload = {"specialist": "chat", "alias": "production", "adapter_id": "chat@2",
               "previous_adapter_id": None, "reason": "r", "kind": "move", "added_later": "secret"}
    assert "added_later" not in TOPICS["alias.moved"].view(payload, OPERATOR)


def test_a_subscription_reads_with_its_topics_scopes_only() -> None:
    assert TENANT.scopes == {"registry:read", "contracts:read"} and TENANT.tenant == "acme"
    assert not TENANT.allows("events:read") and OPERATOR.operator


def test_the_gate_record_is_summarised_for_everyone_and_paths_are_operators() -> None:
    record = {"decision": "x", "rollouts": {"successor": {"mean_reward": 1.0, "cases": ["turn:s:1"],
                                                         "answers": ["hi"], "rewards": [1.0]}}}
    payload = {"adapter_id": "chat@1", "gate": record, "metrics": {"gate": record, "loss": 0.5},
               "artifact_uri": "file:///srv/hcp/artifacts/ab/abcd"}
    for who in (TENANT, OPERATOR):
        shown = TOPICS["adapter.registered"].view(payload, who)
        assert "turn:s:1" not in str(shown) and "'hi'" not in str(shown)
        assert shown["metrics"]["loss"] == 0.5
        assert shown["gate"]["rollouts"]["cases"] == {"count": 1}
    assert "artifact_uri" not in TOPICS["adapter.registered"].view(payload, TENANT)
    assert TOPICS["adapter.registered"].view(payload, OPERATOR)["artifact_uri"] == payload["artifact_uri"]


def test_a_publish_checks_samples_are_an_operators_without_event_text() -> None:
    check = {"subjects": 3, "errors": 1, "samples": [
        {"subject_id": "turn:globex-1:1", "item": "criterion:x", "kind": "error",
         "message": "no such key: 'a0 of globex-1'"}]}
    payload = {"name": "default", "version": 2, "content_hash": "h", "forced": None, "check": check}
    assert TOPICS["contract.published"].view(payload, TENANT)["check"] == {**check, "samples": []}
    (sample,) = TOPICS["contract.published"].view(payload, OPERATOR)["check"]["samples"]
    assert sample["subject_id"] == "turn:globex-1:1" and "a0 of globex-1" not in sample["message"]


def test_a_failed_runs_error_and_a_runs_examples_stay_on_the_server() -> None:
    failed = {"run_id": "r", "attempt": 1, "error": "FileNotFoundError: /srv/hcp/models/x"}
    assert TOPICS["training.failed"].view(failed, TENANT) == {"run_id": "r", "attempt": 1}
    assert TOPICS["training.failed"].view(failed, OPERATOR) == failed
    succeeded = {"run_id": "r", "examples": ["reward-1"], "examples_sha256": "e"}
    for who in (TENANT, OPERATOR):
        assert "examples" not in TOPICS["training.succeeded"].view(succeeded, who)
