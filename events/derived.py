"""Streams the server derives from who is writing: a chat user's session and an OTLP
conversation. Their names are computable by anyone who knows the tenant and the user (or
the conversation), so a client may never be the one to create them: another tenant would
take the stream first, and every later write of its owner would be refused. A client may
append to one of its own once the server has opened it.

* ``otel:<tenant>:<conversation>`` (``integrations.otlp.mapping``): by prefix.
* ``session-<uuid>`` where the uuid is a derived id (``derived_id``): an RFC 9562 version 8
  UUID whose first 32 bits are ``DERIVED_TAG`` and whose other bits are a SHA-256 of the
  namespace and name, as uuid5 would be. Clients' own sessions (uuid4, or uuid5 as the
  built-in harness writes them) are never version 8 with this tag, and 128 random bits
  are one in 2^36.

Any spelling ``uuid.UUID`` reads (upper case, braces, no hyphens, ``urn:uuid:``) and any
case of the prefixes counts: the check reads what the name means, not how it is written.
"""

from __future__ import annotations

import hashlib
import uuid

DERIVED_TAG = 0x68637064  # "hcpd"
OTLP_PREFIX = "otel:"
SESSION_PREFIX = "session-"


def derived_id(namespace: uuid.UUID, name: str) -> uuid.UUID:
    """A stable id for ``name`` under ``namespace`` that ``is_derived_id`` recognises."""
    digest = int.from_bytes(hashlib.sha256(namespace.bytes + name.encode()).digest()[:16], "big")
    value = (DERIVED_TAG << 96) | (digest & ((1 << 96) - 1))
    value = (value & ~(0xF << 76)) | (8 << 76)  # version 8
    value = (value & ~(0x3 << 62)) | (0x2 << 62)  # the RFC variant
    return uuid.UUID(int=value)


def is_derived_id(text: str) -> bool:
    try:
        found = uuid.UUID(text.strip())
    except ValueError:
        return False
    return found.version == 8 and found.int >> 96 == DERIVED_TAG


def derived_stream(stream_id: str) -> bool:
    """Whether ``stream_id`` is one only the server may create."""
    lowered = stream_id.lower()
    if lowered.startswith(OTLP_PREFIX):
        return True
    return lowered.startswith(SESSION_PREFIX) and is_derived_id(stream_id[len(SESSION_PREFIX):])
