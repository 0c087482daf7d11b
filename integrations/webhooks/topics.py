"""The event types a webhook may subscribe to, named by their owners' constants, and what a
key must be allowed to read to subscribe to each (the same scope as the route that shows
it; ``operator``: only a key without a tenant)."""

from __future__ import annotations

from dataclasses import dataclass

from audit.events import AuditFailed
from contract.events import Published, Retired
from evaluators.events import ReevaluationFinished
from events.server_events import ServerEvent
from integrations.webhooks.events import WebhookDisabled
from trainer.registry.events import AdapterRegistered, AdapterStatusChanged, AliasMoved, AliasMoveRequested
from trainer.runs.events import TrainingFailed, TrainingSucceeded


@dataclass(frozen=True)
class Topic:
    event: type[ServerEvent]
    scope: str
    operator: bool = False
    note: str = ""

    @property
    def name(self) -> str:
        return self.event.TYPE


TOPICS: dict[str, Topic] = {t.name: t for t in (
    Topic(AdapterRegistered, "registry:read", note="a successor was registered (with the gate's verdict)"),
    Topic(TrainingSucceeded, "registry:read", note="the gate decided: promoted, candidate or rejected"),
    Topic(AdapterStatusChanged, "registry:read", note="promoted, rejected or rolled back from"),
    Topic(AliasMoved, "registry:read", note="an alias moved or was rolled back (kind)"),
    Topic(AliasMoveRequested, "registry:read", note="a protected alias's move awaits approval"),
    Topic(Published, "contracts:read", note="a contract version was published"),
    Topic(Retired, "contracts:read", note="a contract version was retired"),
    Topic(ReevaluationFinished, "contracts:read", note="a re-evaluation of history finished"),
    Topic(TrainingFailed, "registry:read", note="a training run failed"),
    Topic(AuditFailed, "audit:read", operator=True, note="an audit found mismatches"),
    Topic(WebhookDisabled, "admin", operator=True, note="a subscription was disabled"),
)}
