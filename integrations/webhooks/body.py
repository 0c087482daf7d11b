"""What a delivery says: the event, in the Standard Webhooks envelope, its payload as the
subscription's view shows it (``integrations.webhooks.views``). Pure.

The bytes are the same at every attempt (the signature's timestamp is the attempt's), so a
receiver that dedupes by ``webhook-id`` (the event id) sees one message however often it
was sent.
"""

from __future__ import annotations

import json
from typing import Any

from events.model import RecordedEvent
from kernel.clock import utc


def delivery_body(event: RecordedEvent, payload: dict[str, Any]) -> bytes:
    meta = event.metadata
    recorded_at = utc(event.recorded_at).isoformat()
    return json.dumps({
        "type": event.type, "timestamp": recorded_at,
        "data": {"event_id": str(event.event_id), "position": event.position,
                 "stream_id": event.stream_id, "stream_seq": event.stream_seq,
                 "schema_version": event.schema_version, "recorded_at": recorded_at,
                 "actor": meta.actor, "tenant": meta.tenant, "payload": payload},
    }, separators=(",", ":"), sort_keys=True).encode()


def visible_to(subscription_tenant: str | None, event: RecordedEvent) -> bool:
    """A tenant's subscription hears its own tenant's events and shared ones (the registry,
    contracts, training: written for no tenant); an operator's hears every one."""
    tenant = event.metadata.tenant
    return subscription_tenant is None or tenant is None or tenant == subscription_tenant
