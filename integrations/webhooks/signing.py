"""Signing deliveries the Standard Webhooks way (standardwebhooks.com). Pure.

Why this scheme: it is a published spec with verifiers in many languages (the
``standardwebhooks`` and ``svix`` packages verify these headers unchanged), and it signs
the message id and a timestamp with the body, so a receiver can refuse a replay (an old
timestamp) and drop a duplicate (a ``webhook-id`` it has seen: retries keep the id).

    webhook-id: <the event's id>
    webhook-timestamp: <unix seconds>
    webhook-signature: v1,<base64 HMAC-SHA256(secret, "<id>.<timestamp>.<body>")>

A secret is ``whsec_`` + base64 of 24 to 64 random bytes (what the spec's libraries
generate), or plain text of at least 24 characters, used as its UTF-8 bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

PREFIX = "whsec_"
MIN_BYTES, MAX_BYTES = 24, 64


class SecretInvalid(ValueError):
    pass


def secret_bytes(secret: str) -> bytes:
    """The HMAC key a secret stands for.

    Raises:
        SecretInvalid: too short, too long, or a ``whsec_`` secret that is not base64.
    """
    if secret.startswith(PREFIX):
        try:
            key = base64.b64decode(secret[len(PREFIX):], validate=True)
        except (binascii.Error, ValueError):
            raise SecretInvalid("a whsec_ secret must be base64 after the prefix") from None
    else:
        key = secret.encode()
    if not MIN_BYTES <= len(key) <= MAX_BYTES:
        raise SecretInvalid(f"the secret must hold {MIN_BYTES} to {MAX_BYTES} bytes "
                            f"(it holds {len(key)})")
    return key


def signature(key: bytes, message_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def headers(key: bytes, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {"webhook-id": message_id, "webhook-timestamp": str(timestamp),
            "webhook-signature": signature(key, message_id, timestamp, body),
            "content-type": "application/json"}


def verify(key: bytes, message_id: str, timestamp: int, body: bytes, header: str) -> bool:
    """Whether any ``v1`` signature of ``header`` (space-separated) signs the message."""
    expected = signature(key, message_id, timestamp, body)
    return any(hmac.compare_digest(expected, candidate) for candidate in header.split())
