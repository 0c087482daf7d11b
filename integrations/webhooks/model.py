"""A subscription and a delivery attempt as the services hand them out. Pure. Neither
carries the secret: nothing that leaves the server has it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from kernel.clock import utc
from kernel.errors import Forbidden, Invalid, NotFound

# Every failed attempt's message, whatever the cause (the cause is in the server's log).
NOT_ACKNOWLEDGED = "the receiver did not acknowledge the delivery (no 2xx answer within the deadline)"


class SubscriptionNotFound(NotFound):
    pass


class WebhookInvalid(Invalid):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class WebhookForbidden(Forbidden):
    pass


@dataclass(frozen=True)
class Subscription:
    subscription_id: str
    url: str
    event_types: tuple[str, ...]
    tenant: str | None
    description: str
    status: str
    status_reason: str | None
    created_by: str
    created_at: datetime
    from_position: int

    def to_json(self) -> dict[str, Any]:
        return {"subscription_id": self.subscription_id, "url": self.url,
                "event_types": list(self.event_types), "tenant": self.tenant,
                "description": self.description, "status": self.status,
                "status_reason": self.status_reason, "created_by": self.created_by,
                "created_at": utc(self.created_at).isoformat(), "from_position": self.from_position}


@dataclass(frozen=True)
class Delivery:
    delivery_id: str
    subscription_id: str
    event_id: str
    position: int
    event_type: str
    attempt: int
    status: str  # queued | succeeded | failed
    redelivery: bool
    response_status: int | None
    error: str | None
    duration_ms: float | None
    requested_by: str | None
    created_at: datetime
    finished_at: datetime | None

    def to_json(self, operator: bool = False) -> dict[str, Any]:
        """As the subscriber sees it: a failure is one message whatever happened (rows
        written before that kept the receiver's text), and only an operator sees the
        receiver's status: what an internal receiver answers is not the tenant's to read."""
        body = {k: getattr(self, k) for k in self.__dataclass_fields__}
        body["created_at"] = utc(self.created_at).isoformat()
        body["finished_at"] = utc(self.finished_at).isoformat() if self.finished_at else None
        body["error"] = NOT_ACKNOWLEDGED if self.status == "failed" else None
        if self.status == "failed":
            body["duration_ms"] = None
        if not operator:
            body["response_status"] = None
        return body


def check_url(url: str) -> str:
    """An absolute http(s) URL with a host; the server POSTs to nothing else."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookInvalid("url", "must be an absolute http:// or https:// URL with a host")
    if parts.username or parts.password:
        raise WebhookInvalid("url", "must not carry credentials (sign with the secret instead)")
    return url
