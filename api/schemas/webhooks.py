"""Bodies of /v1/webhooks. No response carries the secret."""

from __future__ import annotations

from pydantic import BaseModel, Field

from api.schemas.common import Out, Position, Timestamp, UuidText


class WebhookIn(BaseModel):
    url: str = Field(min_length=1, max_length=2000, description="Where deliveries are POSTed")
    event_types: list[str] = Field(min_length=1, max_length=50, description="Event types to "
                                   "deliver (GET /v1/webhooks/event-types lists them)")
    secret: str = Field(min_length=24, max_length=200, description="Signing secret: whsec_ + "
                        "base64 of 24-64 bytes, or 24-64 characters; stored encrypted, never shown")
    tenant: str | None = Field(None, max_length=200, description="Operator keys only: whose events "
                               "(default every tenant's); a tenant's key always gets its own")
    description: str = Field("", max_length=500)


class WebhookOut(Out):
    subscription_id: UuidText
    url: str
    event_types: list[str]
    tenant: str | None
    description: str
    status: str = Field(description="active | disabled | deleted")
    status_reason: str | None
    created_by: str
    created_at: Timestamp
    from_position: Position = Field(description="Events after this position are delivered")


class WebhookList(Out):
    webhooks: list[WebhookOut]


class EventTypeOut(Out):
    type: str
    scope: str = Field(description="The scope a key needs to subscribe to it")
    operator_only: bool
    summary: str


class DeliveryOut(Out):
    delivery_id: UuidText
    subscription_id: UuidText
    event_id: UuidText
    position: Position
    event_type: str
    attempt: int = Field(description="1, 2, … at the same event (a redelivery repeats its attempt's)")
    status: str = Field(description="queued | succeeded | failed")
    redelivery: bool
    response_status: int | None = Field(description="The receiver's HTTP status, to operator keys "
                                        "only (what an internal receiver answers is not a tenant's to read)")
    error: str | None = Field(description="A failure's one message, whatever happened (the cause is "
                              "in the server's log)")
    duration_ms: float | None = Field(description="How long a success took; null for a failure, "
                                      "whose outcome is recorded at the attempt's deadline")
    requested_by: str | None
    created_at: Timestamp
    finished_at: Timestamp | None


class DeliveryPage(Out):
    deliveries: list[DeliveryOut]
    next_before: Timestamp | None = Field(description="Pass as ?before= for older attempts")
