"""Canonical JSON: one byte sequence per JSON value, so digests are reproducible."""

from __future__ import annotations

import hashlib
import json
from typing import Any

# json.dumps with these options builds a new encoder on every call (a quarter of its cost
# for a small payload); one shared encoder writes the same text (it keeps no state).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, UTF-8 kept (not \\u-escaped)."""
    return _CANONICAL.encode(value)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def canonical_sha256(value: Any) -> str:
    """sha256 (64 lowercase hex digits) of the value's canonical JSON."""
    return sha256_hex(canonical_json(value))
