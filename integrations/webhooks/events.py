"""A subscription's life in the log, on stream ``webhook:<id>``. Pure.

The secret is in the event only as ciphertext (``integrations.webhooks.secrets``): the row
is re-derivable from its event, as every projection must be, and a reader of the log (or of
a backup) learns nothing it could sign with.
"""

from __future__ import annotations

from pydantic import Field

from events.server_events import ServerEvent


def webhook_stream(subscription_id: str) -> str:
    return f"webhook:{subscription_id}"


class WebhookEvent(ServerEvent):
    subscription_id: str


class WebhookSubscribed(WebhookEvent):
    TYPE = "webhook.subscribed"
    SUMMARY = "A webhook subscription was made: its URL, the event types it wants, its tenant"

    url: str
    event_types: list[str]
    tenant: str | None = Field(description="Whose events it receives; None: every tenant's")
    description: str
    secret_ciphertext: str = Field(description="The signing secret, encrypted with the "
                                   "server's webhook key (never the secret itself)")
    from_position: int = Field(description="Deliveries start after this log position")


class WebhookDeleted(WebhookEvent):
    TYPE = "webhook.deleted"
    SUMMARY = "A webhook subscription was deleted: nothing more is delivered to it"

    reason: str


class WebhookDisabled(WebhookEvent):
    TYPE = "webhook.disabled"
    SUMMARY = "A webhook subscription was disabled after repeated failed deliveries"

    reason: str
    failures: int = Field(description="Failed attempts in a row at the event it stopped on")
    event_id: str = Field(description="The event whose delivery kept failing")


class WebhookEnabled(WebhookEvent):
    TYPE = "webhook.enabled"
    SUMMARY = "A disabled webhook subscription was enabled again (it resumes where it stopped)"

    reason: str
