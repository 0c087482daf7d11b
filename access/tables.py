"""SQL table of API keys: only a hash of each secret is stored."""

from __future__ import annotations

from sqlalchemy import JSON, BigInteger, Column, DateTime, String, Table, Text

from kernel.db import metadata

api_keys = Table(
    "api_keys",
    metadata,
    Column("key_id", String(32), primary_key=True),
    Column("secret_sha256", String(64), nullable=False),
    Column("scopes", JSON, nullable=False),
    Column("label", String(200)),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("tenant", String(200)),  # NULL: an operator key, for every tenant
    Column("expires_at", DateTime(timezone=True)),  # NULL: never expires
    # Written at most once a minute per key and process, not on every request.
    Column("last_used_at", DateTime(timezone=True)),
    Column("revoked_at", DateTime(timezone=True)),
    Column("revoked_by", String(200)),
    Column("revoked_reason", Text),
    # The position of the key's latest api_key.console_signed_out: console cookies issued
    # before it are refused. NULL: never signed out.
    Column("console_signed_out_position", BigInteger),
)
