"""Webhook subscriptions: made, deleted, disabled and enabled by events in the log, read from
their projection. Tenants see only their own, and have at most ``max_per_tenant`` (each is
a lane of the deliverer). A URL is refused unless its host resolves to public addresses or
to what the operator allows (``integrations.webhooks.targets``); the deliverer checks again
before every attempt."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine

from events.model import EventMetadata
from events.projections.sql import write_in
from events.store import EventStore
from integrations.webhooks.events import (
    WebhookDeleted,
    WebhookDisabled,
    WebhookEnabled,
    WebhookEvent,
    WebhookSubscribed,
    webhook_stream,
)
from integrations.webhooks.model import Subscription, SubscriptionNotFound, WebhookInvalid, check_url
from integrations.webhooks.projections import ACTIVE, DELETED, DISABLED, WEBHOOK_PROJECTIONS
from integrations.webhooks.secrets import SecretBox
from integrations.webhooks.signing import SecretInvalid, secret_bytes
from integrations.webhooks.tables import webhook_subscriptions as subs
from integrations.webhooks.targets import REFUSED, TargetPolicy, TargetRefused
from integrations.webhooks.topics import TOPICS
from kernel.errors import Conflict

DISABLER = "system:webhooks"


class Subscriptions:
    def __init__(self, engine: Engine, store: EventStore, box: SecretBox,
                 targets: TargetPolicy | None = None, max_per_tenant: int = 20) -> None:
        self.engine, self.store, self.box = engine, store, box
        self.targets, self.max_per_tenant = targets or TargetPolicy(), max_per_tenant

    def subscribe(self, url: str, event_types: Sequence[str], secret: str, tenant: str | None,
                  actor: str, description: str = "") -> Subscription:
        """A new subscription to ``event_types`` after the log's head now.

        Raises:
            WebhookInvalid: a bad URL, one whose host is not public (nor allowed), an unknown
                type, or a bad secret (422).
            Conflict: the tenant has ``max_per_tenant`` subscriptions already (409).
        """
        unknown = sorted(set(event_types) - set(TOPICS))
        if not event_types or unknown:
            raise WebhookInvalid("event_types", f"unknown event type(s) {unknown}; choose from "
                                 f"{sorted(TOPICS)}" if unknown else "name at least one event type")
        try:
            key = secret_bytes(secret)
        except SecretInvalid as exc:
            raise WebhookInvalid("secret", str(exc)) from None
        self._check_target(check_url(url))
        if tenant is not None and len(self.listed(tenant)) >= self.max_per_tenant:
            raise Conflict(f"tenant {tenant} has {self.max_per_tenant} webhook subscriptions, the "
                           "most it may have; delete one first")
        event = WebhookSubscribed(
            subscription_id=str(uuid.uuid4()), url=url,
            event_types=sorted(set(event_types)), tenant=tenant, description=description,
            secret_ciphertext=self.box.seal(key), from_position=self.store.head())
        self._write(event, actor, tenant)
        return self.get(event.subscription_id, tenant)

    def _check_target(self, url: str) -> None:
        try:
            self.targets.check(url)
        except TargetRefused:  # why (which address) stays here: see targets.REFUSED
            raise WebhookInvalid("url", REFUSED) from None

    def get(self, subscription_id: str, tenant: str | None = None) -> Subscription:
        """The subscription (a tenant's key: only its own; an operator's: any).

        Raises:
            SubscriptionNotFound: no such subscription for this caller (404).
        """
        found = [s for s in self._rows(subs.c.subscription_id == subscription_id)
                 if tenant is None or s.tenant == tenant]
        if not found or found[0].status == DELETED:
            raise SubscriptionNotFound(f"no webhook subscription {subscription_id}")
        return found[0]

    def listed(self, tenant: str | None = None) -> list[Subscription]:
        where = subs.c.status != DELETED
        if tenant is not None:
            where = where & (subs.c.tenant == tenant)
        return self._rows(where)

    def active(self) -> list[Subscription]:
        return self._rows(subs.c.status == ACTIVE)

    def delete(self, subscription_id: str, tenant: str | None, actor: str,
               reason: str = "") -> Subscription:
        """The subscription as it is now: deleted (nothing more is delivered to it)."""
        found = self.get(subscription_id, tenant)
        reason = reason or f"deleted by {actor}"
        self._write(WebhookDeleted(subscription_id=found.subscription_id, reason=reason),
                    actor, found.tenant)
        return replace(found, status=DELETED, status_reason=reason)

    def enable(self, subscription_id: str, tenant: str | None, actor: str) -> Subscription:
        found = self.get(subscription_id, tenant)
        if found.status != DISABLED:
            raise Conflict(f"webhook subscription {subscription_id} is {found.status}, not disabled")
        self._write(WebhookEnabled(subscription_id=subscription_id, reason=f"enabled by {actor}"),
                    actor, found.tenant)
        return self.get(subscription_id, tenant)

    def disable(self, found: Subscription, reason: str, failures: int, event_id: str) -> None:
        """Stop delivering (``webhook.disabled``); the checkpoint stays where it stopped."""
        self._write(WebhookDisabled(subscription_id=found.subscription_id, reason=reason,
                                    failures=failures, event_id=event_id), DISABLER, found.tenant)

    def signing_key(self, subscription_id: str) -> bytes:
        with self.engine.connect() as conn:
            sealed = conn.execute(select(subs.c.secret_ciphertext).where(
                subs.c.subscription_id == subscription_id)).scalar_one()
        return self.box.open(sealed)

    def _write(self, event: WebhookEvent, actor: str, tenant: str | None) -> None:
        with self.engine.begin() as conn:
            write_in(conn, self.store, WEBHOOK_PROJECTIONS, webhook_stream(event.subscription_id),
                     event, EventMetadata(actor=actor, tenant=tenant))

    def _rows(self, where: Any) -> list[Subscription]:
        columns = [c for c in subs.c if c.name not in ("secret_ciphertext", "updated_position")]
        with self.engine.connect() as conn:
            rows = conn.execute(select(*columns).where(where).order_by(subs.c.created_at,
                                                                       subs.c.subscription_id))
            return [Subscription(**{**r._mapping, "event_types": tuple(r._mapping["event_types"])})
                    for r in rows]
