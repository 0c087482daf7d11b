"""API keys: issued once, stored only as a hash, checked on every request; they expire,
are revoked, and each creation and revocation is an event on stream ``api_key:<id>``
(never the secret).

Keys are 32 random bytes, so a fast sha256 is as good as a slow password hash here:
there is nothing to brute-force. The key id is part of the key, so lookup is by
primary key and the comparison is constant-time.

Checking a key costs no SQL on most requests: an authenticated key's row is cached in
the process for ``cache_ttl_s`` seconds. A revocation made in this process takes effect
at once; one made elsewhere (the CLI, another API process) within ``cache_ttl_s``.
Expiry is checked on every request against the cached expiry time. ``last_used_at`` is
written at most once per ``last_used_every_s`` per key and process, not per request.
Console sessions are checked against the same cached row (``console_key``): revoking a
key, or signing it out of the console, ends its sessions on the same terms.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from access.key_log import (
    API_KEYS,
    KEY_PROJECTIONS,
    ApiKeyConsoleSignedOut,
    ApiKeyCreated,
    ApiKeyRevoked,
    agrees_with_log,
    key_stream,
)
from access.principal import SCOPES, Principal
from access.tables import api_keys
from events.model import EventMetadata
from events.projections.sql import set_working_in, write_in
from events.store import EventStore
from kernel.clock import utc, utcnow
from kernel.errors import Conflict, Invalid, NotFound

log = logging.getLogger(__name__)

KEY_PREFIX = "hcp"
CACHE_MAX = 10_000  # keys held at once; the cache is cleared when full
IDS_EVERY_S = 1.0  # the issued ids are read again on a miss at most this often


class UnknownScope(Invalid):
    field = "scopes"


class KeyNotFound(NotFound):
    pass


class KeyConflict(Conflict):
    pass


@dataclass(frozen=True)
class KeyInfo:
    """A key as ``hcp keys list`` shows it (no secret, no hash)."""

    key_id: str
    scopes: tuple[str, ...]
    label: str | None
    tenant: str | None
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None
    revoked_by: str | None
    revoked_reason: str | None
    console_signed_out_position: int | None = None  # console sessions before it are ended

    def usable(self, now: datetime) -> bool:
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)

    @property
    def principal(self) -> Principal:
        return Principal(self.key_id, frozenset(self.scopes), self.label, self.tenant)

    def to_json(self) -> dict[str, Any]:
        return {k: (v.isoformat() if isinstance(v, datetime) else list(v) if isinstance(v, tuple)
                    else v) for k, v in self.__dict__.items()}


def key_id_of(key: str) -> str | None:
    """The id part of ``hcp_<id>_<secret>`` (not secret: it names the key), or None."""
    parts = key.split("_", 2)
    return parts[1] if len(parts) == 3 and parts[0] == KEY_PREFIX and parts[1] else None


class ApiKeys:
    """The keys of one database: issue, list, revoke, and check (the API asks on every request)."""

    def __init__(self, engine: Engine, store: EventStore, cache_ttl_s: float = 5.0,
                 last_used_every_s: float = 60.0,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.engine, self.store = engine, store
        self.cache_ttl_s, self.last_used_every_s, self._monotonic = (
            cache_ttl_s, last_used_every_s, monotonic)
        self._cache: dict[str, tuple[float, str, KeyInfo]] = {}  # id -> (fetched, digest, info)
        self._used_written: dict[str, float] = {}
        self._lock = threading.Lock()
        self._ids: tuple[float, frozenset[str]] | None = None  # (fetched, every key id issued)
        self._ids_lock = threading.Lock()

    def create(self, scopes: list[str], label: str | None = None, tenant: str | None = None,
               expires_at: datetime | None = None, actor: str = "system") -> str:
        """Store a new key's hash and return the key itself (shown once, never again).

        Raises:
            UnknownScope: a scope is not one of ``SCOPES`` (or none was given).
            KeyConflict: ``label`` names another key (labels attribute changes in the log).
            Invalid: ``expires_at`` is not in the future.
        """
        unknown = sorted(set(scopes) - set(SCOPES))
        if unknown or not scopes:
            raise UnknownScope(f"unknown scope(s) {unknown}; choose from {list(SCOPES)}")
        now = utcnow()
        if expires_at is not None and utc(expires_at) <= now:
            raise Invalid(f"expiry {expires_at.isoformat()} is not in the future")
        key_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
        expiry = utc(expires_at) if expires_at else None
        created = ApiKeyCreated(key_id=key_id, scopes=sorted(set(scopes)), label=label, tenant=tenant,
                                expires_at=expiry.isoformat() if expiry else None,
                                secret_sha256=_digest(secret))
        with self.engine.begin() as conn:
            if label is not None and conn.execute(
                    select(api_keys.c.key_id).where(api_keys.c.label == label)).first():
                raise KeyConflict(f"the label '{label}' names another key; labels are unique")
            self._journal(conn, created, actor)
        with self._ids_lock:
            if self._ids is not None:  # known at once here; elsewhere on their next read
                self._ids = (self._ids[0], self._ids[1] | {key_id})
        return f"{KEY_PREFIX}_{key_id}_{secret}"

    def all_keys(self) -> list[KeyInfo]:
        """Every key, oldest first, revoked and expired ones included."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(api_keys).order_by(api_keys.c.created_at, api_keys.c.key_id))
            return [_info(r._mapping) for r in rows]

    def get(self, key_id: str) -> KeyInfo:
        with self.engine.connect() as conn:
            row = conn.execute(select(api_keys).where(api_keys.c.key_id == key_id)).first()
        if row is None:
            raise KeyNotFound(f"no key '{key_id}'")
        return _info(row._mapping)

    def revoke(self, key_id: str, actor: str, reason: str = "") -> KeyInfo:
        """Refuse the key from now on (other processes: within ``cache_ttl_s``)."""
        with self.engine.begin() as conn:
            row = conn.execute(select(api_keys).where(api_keys.c.key_id == key_id)).first()
            if row is None:
                raise KeyNotFound(f"no key '{key_id}'")
            if row.revoked_at is not None:
                raise KeyConflict(f"key '{key_id}' was revoked at {utc(row.revoked_at).isoformat()}")
            self._journal(conn, ApiKeyRevoked(key_id=key_id, reason=reason), actor)
        self._cache.pop(key_id, None)
        return self.get(key_id)

    def end_console_sessions(self, key_id: str, actor: str) -> None:
        """Sign the key out of the console everywhere: every session cookie issued so far
        is refused (here at once, in other processes within ``cache_ttl_s``)."""
        with self.engine.begin() as conn:
            self._journal(conn, ApiKeyConsoleSignedOut(key_id=key_id), actor)
        self._cache.pop(key_id, None)

    def console_generation(self, key_id: str) -> int:
        """What a console session signed in now carries: where the key's sessions were
        last ended (0: never), read afresh (a cached row may predate a sign-out)."""
        found = self._lookup(key_id, fresh=True)
        return (found[1].console_signed_out_position or 0) if found else 0

    def console_key(self, key_id: str, generation: int) -> KeyInfo | None:
        """The key of a console session issued at ``generation``, or None: unknown,
        revoked, expired, or its sessions ended since. The row is the cached one the API's
        key check uses, so this too holds within ``cache_ttl_s`` across processes."""
        found = self._lookup(key_id)
        if found is None:
            return None
        info = found[1]
        ended = info.console_signed_out_position or 0
        return info if info.usable(utcnow()) and generation >= ended else None

    def authenticate(self, key: str) -> Principal | None:
        """The key's principal, or None: malformed, unknown, wrong secret, revoked, expired."""
        parts = key.split("_", 2)
        if len(parts) != 3 or parts[0] != KEY_PREFIX:
            return None
        _, key_id, secret = parts
        found = self._lookup(key_id)
        if found is None:
            return None
        digest, info = found
        if not hmac.compare_digest(digest, _digest(secret)) or not info.usable(utcnow()):
            return None
        self._note_use(key_id)
        return info.principal

    def issued(self, key_id: str) -> bool:
        """Whether a key with this id was ever issued (revoked and expired ones too). The
        ids are read again on a miss at most once a second, however many ask, so a flood
        of made-up ids costs the database one small query a second, and a key issued
        elsewhere is known within that second."""
        with self._ids_lock:
            now = self._monotonic()
            if self._ids is not None and (key_id in self._ids[1] or now - self._ids[0] < IDS_EVERY_S):
                return key_id in self._ids[1]
            with self.engine.connect() as conn:
                self._ids = (now, frozenset(conn.execute(select(api_keys.c.key_id)).scalars()))
            return key_id in self._ids[1]

    def authenticate_without_io(self, key: str) -> Principal | None:
        """The key's principal if that answer needs no database (its cache entry is fresh
        and its last use is not due to be written); None otherwise, and then
        ``authenticate`` decides. The API's gate asks this on its event loop first."""
        parts = key.split("_", 2)
        if len(parts) != 3 or parts[0] != KEY_PREFIX:
            return None
        _, key_id, secret = parts
        now = self._monotonic()
        cached = self._cache.get(key_id)
        if cached is None or now - cached[0] >= self.cache_ttl_s:
            return None
        last = self._used_written.get(key_id)
        if last is None or now - last >= self.last_used_every_s:
            return None
        fetched, digest, info = cached
        if not hmac.compare_digest(digest, _digest(secret)) or not info.usable(utcnow()):
            return None
        return info.principal

    def _lookup(self, key_id: str, fresh: bool = False) -> tuple[str, KeyInfo] | None:
        now = self._monotonic()
        cached = self._cache.get(key_id)
        if cached is not None and now - cached[0] < self.cache_ttl_s and not fresh:
            return cached[1], cached[2]
        with self.engine.connect() as conn:
            row = conn.execute(select(api_keys).where(api_keys.c.key_id == key_id)).first()
        if row is None:
            self._cache.pop(key_id, None)
            return None  # unknown ids are not cached: they would fill the cache
        disagreement = agrees_with_log(self.store, row)
        if disagreement is not None:  # the log says what a key may do, not the table
            log.error("key %s refused: its api_keys row is not what its events make: %s",
                      key_id, disagreement)
            self._cache.pop(key_id, None)
            return None
        if len(self._cache) >= CACHE_MAX:
            self._cache.clear()
        self._cache[key_id] = (now, row.secret_sha256, _info(row._mapping))
        return row.secret_sha256, self._cache[key_id][2]

    def _note_use(self, key_id: str) -> None:
        now = self._monotonic()
        with self._lock:
            last = self._used_written.get(key_id)
            if last is not None and now - last < self.last_used_every_s:
                return
            self._used_written[key_id] = now
        try:
            with self.engine.begin() as conn:
                set_working_in(conn, API_KEYS, api_keys.c.key_id == key_id, last_used_at=utcnow())
        except DBAPIError as exc:  # bookkeeping only: never refuse a request over it
            log.warning("could not record the use of key %s: %s", key_id, exc)

    def _journal(self, conn: Connection, event: ApiKeyCreated | ApiKeyRevoked | ApiKeyConsoleSignedOut,
                 actor: str) -> None:
        # No tenant on key events, even for a tenant's key: they are the operators' record.
        write_in(conn, self.store, KEY_PROJECTIONS, key_stream(event.key_id), event,
                 EventMetadata(actor=actor, occurred_at=utcnow()))


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _info(row: Any) -> KeyInfo:
    def moment(name: str) -> datetime | None:
        return utc(row[name]) if row[name] is not None else None

    return KeyInfo(key_id=row["key_id"], scopes=tuple(row["scopes"]), label=row["label"],
                   tenant=row["tenant"], created_at=utc(row["created_at"]),
                   expires_at=moment("expires_at"), last_used_at=moment("last_used_at"),
                   revoked_at=moment("revoked_at"), revoked_by=row["revoked_by"],
                   revoked_reason=row["revoked_reason"],
                   console_signed_out_position=row["console_signed_out_position"])


def create_key(engine: Engine, scopes: list[str], label: str | None = None,
               tenant: str | None = None) -> str:
    """``ApiKeys.create`` for scripts, benches and tests that hold only an engine (the
    server's processes use the container's ``keys``); journalled like any other key."""
    from events.sql_store import SqlEventStore

    return ApiKeys(engine, SqlEventStore(engine)).create(scopes, label, tenant, actor="script")
