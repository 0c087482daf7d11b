"""What a subscription is shown of an event: what the API shows the same reader. Pure.

A subscription reads as a key of its tenant holding the scopes its topics need (and no
more: no ``events:read``, no ``lineage:read``), so each field is shown as the route that
serves it shows it to such a key: the gate record summarised (``trainer.gate.record``, as
``GET /v1/adapters/{id}``), a publish check's samples without other tenants' subjects or
the events' text, the run's examples (training data, like a manifest's members) never, and
the server's paths and errors (``artifact_uri``, a failed run's ``error``) to operators only.

Every field of every topic's event is named here as shown, or shown by a rule; a field not
named is not sent (tests/unit/test_webhook_views.py fails until a new field is named).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from access.principal import Principal
from contract.error_text import without_event_text
from trainer.gate.record import gate_summary, with_gate_summary

OMIT = object()  # a rule's answer: not shown to this viewer at all
Rule = Callable[[Any, Principal], Any]


@dataclass(frozen=True)
class View:
    shown: tuple[str, ...]  # as written, to every reader of the topic
    rules: Mapping[str, Rule] = field(default_factory=dict)  # as the API shows each reader

    @property
    def fields(self) -> frozenset[str]:
        return frozenset(self.shown) | frozenset(self.rules)

    def __call__(self, payload: Mapping[str, Any], viewer: Principal) -> dict[str, Any]:
        body = {name: payload[name] for name in self.shown if name in payload}
        for name, rule in self.rules.items():
            if name in payload and (value := rule(payload[name], viewer)) is not OMIT:
                body[name] = value
        return body


def operators_only(value: Any, viewer: Principal) -> Any:
    return value if viewer.operator else OMIT


def never(_: Any, __: Principal) -> Any:
    return OMIT


def summarised_gate(record: Any, _: Principal) -> Any:
    return gate_summary(record) if isinstance(record, dict) else record


def summarised_metrics(metrics: Any, _: Principal) -> Any:
    return with_gate_summary({"metrics": metrics})["metrics"] if isinstance(metrics, dict) else metrics


def publish_check(check: Any, viewer: Principal) -> Any:
    """The check's figures; its samples (subjects of every tenant, and what the rubric said
    of them) to an operator only, without the events' text (``errors_json``'s rule)."""
    if not isinstance(check, dict):
        return check
    samples = check.get("samples") or []
    shown = [without_event_text(s) for s in samples] if viewer.operator else []
    return {**check, "samples": shown}


ADAPTER_REGISTERED = View(
    ("adapter_id", "version", "parent_adapter_id", "base_model", "training_run_id", "manifest_id",
     "contract_versions", "hyper", "artifact_sha256", "status"),
    {"gate": summarised_gate, "metrics": summarised_metrics, "artifact_uri": operators_only})
TRAINING_SUCCEEDED = View(
    ("run_id", "attempt", "adapter_id", "status", "artifact_sha256", "gate_reason", "examples_sha256"),
    {"examples": never})
TRAINING_FAILED = View(("run_id", "attempt"), {"error": operators_only})
ADAPTER_STATUS_CHANGED = View(("adapter_id", "status", "previous_status", "reason"))
ALIAS_MOVED = View(("specialist", "alias", "adapter_id", "previous_adapter_id", "reason", "kind"))
ALIAS_MOVE_REQUESTED = View(("request_id", "specialist", "alias", "kind", "adapter_id",
                             "expected_current", "reason"))
CONTRACT_PUBLISHED = View(("name", "version", "content_hash", "forced"), {"check": publish_check})
CONTRACT_RETIRED = View(("name", "version", "content_hash", "reason"))
REEVALUATION_FINISHED = View(("job_id", "contract_name", "contract_version", "status", "from_position",
                              "to_position", "subjects_scored", "subjects_errored", "subjects_skipped"))
AUDIT_FAILED = View(("scope", "mismatches", "checks", "first"))  # operators' topic
WEBHOOK_DISABLED = View(("subscription_id", "reason", "failures", "event_id"))  # operators' topic
