"""Webhook subscriptions and their deliveries (docs/integrations.md). A tenant's key sees and
changes only its tenant's subscriptions, and may subscribe only to what it may read; it sees
of each attempt whether it succeeded, never what the receiver answered."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query

from access.principal import Principal
from api.deps import ContainerDep, require
from api.jsonbody import StrictJsonRoute
from api.responses import BODY, SECURED, errors
from api.schemas.common import UtcDatetime
from api.schemas.webhooks import DeliveryOut, DeliveryPage, EventTypeOut, WebhookIn, WebhookList, WebhookOut
from integrations.webhooks.deliveries import RedeliveryLimited
from integrations.webhooks.topics import TOPICS

router = APIRouter(prefix="/v1/webhooks", tags=["webhooks"], route_class=StrictJsonRoute,
                   responses=SECURED)
WebhooksRead = Annotated[Principal, Depends(require("webhooks:read"))]
WebhooksWrite = Annotated[Principal, Depends(require("webhooks:write"))]


def _tenant_of(principal: Principal, asked: str | None) -> str | None:
    if principal.operator:
        return asked
    if asked not in (None, principal.tenant):
        raise HTTPException(403, "this key subscribes for its own tenant only")
    return principal.tenant


def _may_read(principal: Principal, event_types: list[str]) -> None:
    for name in event_types:
        topic = TOPICS.get(name)
        if topic is None:
            continue  # the service names unknown types (422)
        if not principal.allows(topic.scope) or (topic.operator and not principal.operator):
            raise HTTPException(403, f"this key may not read '{name}' events (needs "
                                f"'{topic.scope}'{' on an operator key' if topic.operator else ''})")


@router.post("", response_model=WebhookOut, status_code=201, responses={**BODY})
def subscribe(body: WebhookIn, principal: WebhooksWrite, c: ContainerDep) -> dict[str, Any]:
    """Subscribe a URL to event types; deliveries start with the next event of the log."""
    _may_read(principal, body.event_types)
    found = c.integrations.subscriptions.subscribe(
        body.url, body.event_types, body.secret, _tenant_of(principal, body.tenant),
        principal.actor, body.description)
    return found.to_json()


@router.get("", response_model=WebhookList)
def list_webhooks(principal: WebhooksRead, c: ContainerDep) -> dict[str, Any]:
    """The subscriptions this key's tenant (an operator: every tenant) has."""
    return {"webhooks": [s.to_json() for s in c.integrations.subscriptions.listed(principal.tenant)]}


@router.get("/event-types", response_model=list[EventTypeOut])
def event_types(_: WebhooksRead) -> list[dict[str, Any]]:
    """The event types a webhook may subscribe to, and the scope each needs."""
    return [{"type": t.name, "scope": t.scope, "operator_only": t.operator,
             "summary": t.event.SUMMARY} for t in TOPICS.values()]


@router.get("/{subscription_id}", response_model=WebhookOut, responses=errors(404))
def get_webhook(subscription_id: str, principal: WebhooksRead, c: ContainerDep) -> dict[str, Any]:
    """One subscription (never its secret)."""
    return c.integrations.subscriptions.get(subscription_id, principal.tenant).to_json()


@router.delete("/{subscription_id}", response_model=WebhookOut, responses=errors(404))
def delete_webhook(subscription_id: str, principal: WebhooksWrite, c: ContainerDep) -> dict[str, Any]:
    """Stop delivering to a subscription (a webhook.deleted event); the subscription, deleted."""
    return c.integrations.subscriptions.delete(subscription_id, principal.tenant,
                                               principal.actor).to_json()


@router.post("/{subscription_id}/enable", response_model=WebhookOut, responses=errors(404, 409))
def enable_webhook(subscription_id: str, principal: WebhooksWrite, c: ContainerDep) -> dict[str, Any]:
    """Resume a disabled subscription where its deliveries stopped."""
    return c.integrations.subscriptions.enable(subscription_id, principal.tenant,
                                               principal.actor).to_json()


@router.get("/{subscription_id}/deliveries", response_model=DeliveryPage, responses=errors(404))
def deliveries(subscription_id: str, principal: WebhooksRead, c: ContainerDep,
               limit: Annotated[int, Query(ge=1, le=1000)] = 100,
               before: UtcDatetime | None = None) -> dict[str, Any]:
    """Every delivery attempt, newest first: whether it succeeded and how long a success took
    (the receiver's status: operator keys only)."""
    found = c.integrations.subscriptions.get(subscription_id, principal.tenant)
    page = c.integrations.deliveries.page(found.subscription_id, limit, before)
    nxt = page[-1].to_json()["created_at"] if len(page) == limit else None
    return {"deliveries": [d.to_json(principal.operator) for d in page], "next_before": nxt}


@router.post("/{subscription_id}/deliveries/{delivery_id}/redeliver", response_model=DeliveryOut,
             status_code=202, responses={**errors(404), 429: {
                 **errors(429)[429], "description": "Too many failed authentications, or this "
                 "subscription queued HCP_WEBHOOK_REDELIVERIES_PER_HOUR redeliveries in the last hour"}})
def redeliver(subscription_id: str, delivery_id: str, principal: WebhooksWrite,
              c: ContainerDep) -> dict[str, Any]:
    """Send a delivery's event again (queued: the deliverer sends it at its next step; asking
    again while it waits returns the same queued attempt)."""
    found = c.integrations.subscriptions.get(subscription_id, principal.tenant)
    try:
        queued = c.integrations.deliveries.queue_redelivery(
            found.subscription_id, delivery_id, principal.actor,
            c.settings.webhook_redeliveries_per_hour)
    except RedeliveryLimited as exc:
        raise HTTPException(429, str(exc), headers={"Retry-After": str(exc.retry_after_s)}) from None
    return queued.to_json(principal.operator)
