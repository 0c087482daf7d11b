"""Console sessions: an API key exchanged, once, for a short-lived signed cookie.

The cookie holds no secret: the key's id, label and scopes, an expiry, a random nonce
and the key's sign-out generation when it was issued (the position of its latest
``api_key.console_signed_out``, 0 for none), signed with HMAC-SHA256 under the console
secret (``HCP_CONSOLE_SECRET``). The key itself is checked at sign-in and never stored or
echoed; on every request the console checks the key's row (``ApiKeys.console_key``), so a
revoked key or a sign-out ends the session on the server, not only in the browser. The CSRF token of a session
is derived from its nonce under the same secret, so it needs no server-side state and
changes with every sign-in. Pure: no I/O.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

COOKIE = "hcp_console"


@dataclass(frozen=True)
class ConsoleSession:
    key_id: str
    label: str | None
    scopes: frozenset[str]
    expires_at: int  # unix seconds
    nonce: str
    tenant: str | None = None  # the key's tenant, where keys are bound to one
    generation: int = 0  # the key's sign-out position at issue: a later sign-out ends it

    @property
    def actor(self) -> str:
        """How changes made through the console are attributed (as the API does)."""
        return f"key:{self.label or self.key_id}"

    @property
    def name(self) -> str:
        return self.label or self.key_id

    def allows(self, scope: str) -> bool:
        return "admin" in self.scopes or scope in self.scopes


class SessionCodec:
    """Issue and open session cookies, and derive and check their CSRF tokens."""

    def __init__(self, secret: bytes, ttl_seconds: int, now: Callable[[], float] = time.time) -> None:
        if len(secret) < 16:
            raise ValueError("the console secret must be at least 16 bytes")
        self._secret, self.ttl_seconds, self._now = secret, ttl_seconds, now

    def issue(self, key_id: str, label: str | None, scopes: frozenset[str],
              tenant: str | None = None, generation: int = 0) -> tuple[str, ConsoleSession]:
        session = ConsoleSession(key_id, label, frozenset(scopes),
                                 int(self._now()) + self.ttl_seconds, secrets.token_urlsafe(16), tenant,
                                 generation)
        body = json.dumps({"k": key_id, "l": label, "s": sorted(scopes), "e": session.expires_at,
                           "n": session.nonce, "t": tenant, "g": generation},
                          separators=(",", ":")).encode()
        payload = _b64(body)
        return f"{payload}.{self._sign(b'session', payload.encode())}", session

    def open(self, cookie: str | None) -> ConsoleSession | None:
        """The session a cookie carries, or None if it is absent, forged or expired (or
        older than generations: then it is signed in again)."""
        if not cookie or cookie.count(".") != 1:
            return None
        payload, signature = cookie.split(".")
        if not hmac.compare_digest(signature, self._sign(b"session", payload.encode())):
            return None
        try:
            data = json.loads(_unb64(payload))
            session = ConsoleSession(str(data["k"]), data["l"], frozenset(data["s"]), int(data["e"]),
                                     str(data["n"]), data.get("t"), int(data["g"]))
        except (ValueError, KeyError, TypeError):
            return None
        return session if session.expires_at > self._now() else None

    def csrf_token(self, session: ConsoleSession) -> str:
        return self._sign(b"csrf", session.nonce.encode())

    def csrf_ok(self, session: ConsoleSession, token: str | None) -> bool:
        return bool(token) and hmac.compare_digest(self.csrf_token(session), str(token))

    def proof(self, session: ConsoleSession, subject: str) -> str:
        """A token saying this session was shown ``subject`` (e.g. a dry run of one
        draft's exact content), which an action then requires."""
        return self._sign(b"proof", f"{session.nonce}\x00{subject}".encode())

    def proof_ok(self, session: ConsoleSession, subject: str, token: str | None) -> bool:
        return bool(token) and hmac.compare_digest(self.proof(session, subject), str(token))

    def _sign(self, purpose: bytes, data: bytes) -> str:
        # The purpose keeps a session signature from passing as a CSRF token and back.
        return _b64(hmac.new(self._secret, purpose + b"\x00" + data, hashlib.sha256).digest())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
