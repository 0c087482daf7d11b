"""Checking a delivery on the receiving side (the Standard Webhooks scheme the server signs
with): ``verify(secret, headers, body)`` is True only for an unaltered, recent delivery."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections.abc import Mapping


def key_of(secret: str) -> bytes:
    return base64.b64decode(secret[6:]) if secret.startswith("whsec_") else secret.encode()


def verify(secret: str, headers: Mapping[str, str], body: bytes, tolerance_s: float = 300) -> bool:
    lowered = {k.lower(): v for k, v in headers.items()}
    message_id, stamp = lowered.get("webhook-id", ""), lowered.get("webhook-timestamp", "")
    try:
        if abs(time.time() - int(stamp)) > tolerance_s:
            return False
    except ValueError:
        return False
    signed = f"{message_id}.{stamp}.".encode() + body
    expected = "v1," + base64.b64encode(hmac.new(key_of(secret), signed, hashlib.sha256).digest()).decode()
    return any(hmac.compare_digest(expected, s) for s in lowered.get("webhook-signature", "").split())
