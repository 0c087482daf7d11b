"""The one projector of ``webhook_subscriptions``: a row is what its ``webhook.*`` events say."""

from __future__ import annotations

from typing import Any

from events.projections.model import NO_GUARD, Change, Insert, Projection, ProjectionSet, State, Update
from events.server_events import Logged
from integrations.webhooks.events import WebhookDeleted, WebhookDisabled, WebhookEnabled, WebhookSubscribed
from integrations.webhooks.tables import webhook_subscriptions

ACTIVE, DISABLED, DELETED = "active", "disabled", "deleted"
TABLE = "webhook_subscriptions"
STATUS_AFTER = {WebhookDeleted.TYPE: DELETED, WebhookDisabled.TYPE: DISABLED, WebhookEnabled.TYPE: ACTIVE}


def project_subscriptions(done: Logged[Any], state: State) -> list[Change]:
    event = done.event
    key = (event.subscription_id,)
    if isinstance(event, WebhookSubscribed):
        return [Insert(TABLE, {
            "subscription_id": event.subscription_id, "url": event.url,
            "event_types": list(event.event_types), "tenant": event.tenant,
            "description": event.description, "secret_ciphertext": event.secret_ciphertext,
            "from_position": event.from_position, "status": ACTIVE, "status_reason": None,
            "created_by": done.actor, "created_at": done.recorded_at,
            "updated_position": done.position})]
    status = STATUS_AFTER[event.TYPE]
    return [Update(TABLE, key, {"status": status, "status_reason": event.reason,
                                "updated_position": done.position})]


WEBHOOK_SUBSCRIPTIONS = Projection(
    webhook_subscriptions, (WebhookSubscribed, WebhookDeleted, WebhookDisabled, WebhookEnabled),
    project_subscriptions, guard=NO_GUARD)
WEBHOOK_PROJECTIONS = ProjectionSet(WEBHOOK_SUBSCRIPTIONS)
