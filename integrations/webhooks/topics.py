"""The event types a webhook may subscribe to, named by their owners' constants, what a
key must be allowed to read to subscribe to each (the same scope as the route that shows
it; ``operator``: only a key without a tenant), and what a subscription is shown of each
(``integrations.webhooks.views``)."""

from __future__ import annotations

from dataclasses import dataclass

from access.principal import Principal
from audit.events import AuditFailed
from contract.events import Published, Retired
from evaluators.events import ReevaluationFinished
from events.server_events import ServerEvent
from integrations.webhooks import views
from integrations.webhooks.events import WebhookDisabled
from integrations.webhooks.views import View
from trainer.registry.events import AdapterRegistered, AdapterStatusChanged, AliasMoved, AliasMoveRequested
from trainer.runs.events import TrainingFailed, TrainingSucceeded


@dataclass(frozen=True)
class Topic:
    event: type[ServerEvent]
    scope: str
    view: View
    operator: bool = False
    note: str = ""

    @property
    def name(self) -> str:
        return self.event.TYPE


TOPICS: dict[str, Topic] = {t.name: t for t in (
    Topic(AdapterRegistered, "registry:read", views.ADAPTER_REGISTERED,
          note="a successor was registered (with the gate's verdict)"),
    Topic(TrainingSucceeded, "registry:read", views.TRAINING_SUCCEEDED,
          note="the gate decided: promoted, candidate or rejected"),
    Topic(AdapterStatusChanged, "registry:read", views.ADAPTER_STATUS_CHANGED,
          note="promoted, rejected or rolled back from"),
    Topic(AliasMoved, "registry:read", views.ALIAS_MOVED, note="an alias moved or was rolled back (kind)"),
    Topic(AliasMoveRequested, "registry:read", views.ALIAS_MOVE_REQUESTED,
          note="a protected alias's move awaits approval"),
    Topic(Published, "contracts:read", views.CONTRACT_PUBLISHED, note="a contract version was published"),
    Topic(Retired, "contracts:read", views.CONTRACT_RETIRED, note="a contract version was retired"),
    Topic(ReevaluationFinished, "contracts:read", views.REEVALUATION_FINISHED,
          note="a re-evaluation of history finished"),
    Topic(TrainingFailed, "registry:read", views.TRAINING_FAILED, note="a training run failed"),
    Topic(AuditFailed, "audit:read", views.AUDIT_FAILED, operator=True, note="an audit found mismatches"),
    Topic(WebhookDisabled, "admin", views.WEBHOOK_DISABLED, operator=True,
          note="a subscription was disabled"),
)}


def viewer(subscription_id: str, tenant: str | None, event_types: tuple[str, ...]) -> Principal:
    """Who a subscription reads as: a key of its tenant (none: an operator's) with the scopes
    its topics need, and no more."""
    return Principal(key_id=f"webhook:{subscription_id}", label=None, tenant=tenant,
                     scopes=frozenset(TOPICS[t].scope for t in event_types if t in TOPICS))
