"""Webhook subscriptions (a projection of ``webhook.*`` events) and delivery attempts
(working state: what was sent and what came back, not history the audit vouches for)."""

from __future__ import annotations

from sqlalchemy import JSON, BigInteger, Column, DateTime, Float, Index, Integer, String, Table, Text

from kernel.db import metadata

webhook_subscriptions = Table(
    "webhook_subscriptions",
    metadata,
    Column("subscription_id", String(36), primary_key=True),
    Column("url", Text, nullable=False),
    Column("event_types", JSON, nullable=False),
    Column("tenant", String(200)),  # NULL: an operator's, for every tenant
    Column("description", Text, nullable=False),
    Column("secret_ciphertext", Text, nullable=False),
    Column("from_position", BigInteger, nullable=False),
    Column("status", String(20), nullable=False),  # active | disabled | deleted
    Column("status_reason", Text),
    Column("created_by", String(200), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_position", BigInteger, nullable=False),  # the last event that changed it
)

webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    Column("delivery_id", String(36), primary_key=True),
    Column("subscription_id", String(36), nullable=False),
    Column("event_id", String(36), nullable=False),
    Column("position", BigInteger, nullable=False),
    Column("event_type", String(100), nullable=False),
    Column("attempt", Integer, nullable=False),  # 1, 2, … for the same event and subscription
    Column("status", String(20), nullable=False),  # queued | succeeded | failed
    Column("redelivery", Integer, nullable=False),  # 1: asked for by POST …/redeliver
    Column("response_status", Integer),
    Column("error", Text),
    Column("duration_ms", Float),
    Column("requested_by", String(200)),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
    Index("webhook_deliveries_by_subscription", "subscription_id", "created_at"),
)
