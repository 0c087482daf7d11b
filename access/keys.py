"""API keys: issued once, stored only as a hash, checked on every request.

Keys are 32 random bytes, so a fast sha256 is as good as a slow password hash here:
there is nothing to brute-force. The key id is part of the key, so lookup is by
primary key and the comparison is constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.engine import Engine

from access.tables import api_keys

SCOPES = (
    "admin",
    "events:write", "events:read", "audit:read",
    "contracts:write", "contracts:read", "rewards:read",
    "registry:read", "registry:write", "train:write", "lineage:read",
)
KEY_PREFIX = "hcp"



@dataclass(frozen=True)
class Principal:
    key_id: str
    scopes: frozenset[str]
    label: str | None

    @property
    def actor(self) -> str:
        """How changes made with this key are attributed in the log."""
        return f"key:{self.label or self.key_id}"

    def allows(self, scope: str) -> bool:
        return "admin" in self.scopes or scope in self.scopes


class UnknownScope(ValueError):
    pass


def create_key(engine: Engine, scopes: list[str], label: str | None = None) -> str:
    """Store a new key's hash and return the key itself (shown once, never again)."""
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown or not scopes:
        raise UnknownScope(f"unknown scope(s) {unknown}; choose from {list(SCOPES)}")
    key_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
    with engine.begin() as conn:
        conn.execute(api_keys.insert().values(
            key_id=key_id, secret_sha256=_digest(secret), scopes=sorted(set(scopes)),
            label=label, created_at=datetime.now(UTC),
        ))
    return f"{KEY_PREFIX}_{key_id}_{secret}"


def authenticate(engine: Engine, key: str) -> Principal | None:
    parts = key.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX:
        return None
    _, key_id, secret = parts
    with engine.connect() as conn:
        row = conn.execute(select(api_keys).where(api_keys.c.key_id == key_id)).first()
    if row is None or not hmac.compare_digest(row.secret_sha256, _digest(secret)):
        return None
    return Principal(row.key_id, frozenset(row.scopes), row.label)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiKeys:
    """The keys of one database: issue and check (the API asks this on every request)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def create(self, scopes: list[str], label: str | None = None) -> str:
        return create_key(self.engine, scopes, label)

    def authenticate(self, key: str) -> Principal | None:
        return authenticate(self.engine, key)
