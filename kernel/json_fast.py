"""The fast path of ``parse_strict``: orjson, taken only where it provably parses a body
into exactly what the strict (hooked) ``json.loads`` parse returns without refusing it.

The hooked parse calls Python for every object, which cost more CPU than the rest of
the parse. orjson (C) refuses much of what the strict parse refuses (NaN, Infinity,
1e400, lone surrogates, text that is not UTF-8), but differs in four ways, each ruled
out here before its result is used; where that is not proven, the caller parses the
old way, so every refusal (its status, message and field) is the old one:

* it keeps the last of duplicate keys: a kept key's ``:`` is in its re-encoding and a
  dropped one's is not, so the body's colons must equal the re-encoding's (a colon in a
  string counts on both sides; an escaped one, ``\\u003a``, is left to the old path);
* it turns integers beyond 64 bits into floats: a run of 19 digits is left to the old
  path;
* it accepts NUL (``\\u0000``), which the strict parse refuses by field: any such
  escape (or a surrogate one) is left to the old path;
* it parses up to 1024 levels of nesting, where ``json.loads`` refuses at the
  interpreter's recursion limit less the caller's stack: the re-encoding above refuses
  more than 254 levels (checked at import to be under ``SAFE_DEPTH``).
Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

NOT_PROVEN: Any = object()  # the body needs the strict hooked parse
SAFE_DEPTH = 400  # far below where json.loads refuses (about 1000 less the caller's stack)

# A \u escape of a surrogate, of NUL or of ':' (the colon count would miss it).
_OLD_PATH_ESCAPE = re.compile(rb"\\u(?:[dD][89a-fA-F][0-9a-fA-F]{2}|0000|003[aA])")
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 19  # orjson reads integers beyond 64 bits (20 digits at most) as floats


def _encoder_refuses_deep_nesting() -> bool:
    """Whether orjson refuses to encode nesting deeper than ``SAFE_DEPTH`` (it stops at
    254 today); if not, the fast path is off (its depth proof is the re-encoding)."""
    def encodes(depth: int) -> bool:
        value: list[Any] = []
        for _ in range(depth - 1):
            value = [value]
        try:
            orjson.dumps(value)
        except orjson.JSONEncodeError:
            return False
        return True

    return encodes(64) and not encodes(SAFE_DEPTH + 1)


_FAST_PATH_ON = _encoder_refuses_deep_nesting()


def parse_proven(raw: bytes) -> Any:
    """``raw`` parsed as the strict parse would accept it, or ``NOT_PROVEN`` (refusals,
    and anything not proven equal, included)."""
    if not _FAST_PATH_ON or (b"\\u" in raw and _OLD_PATH_ESCAPE.search(raw)):
        return NOT_PROVEN
    if _LONG_NUMBER in raw.translate(_DIGITS_AS_ZERO):
        return NOT_PROVEN
    try:
        value = orjson.loads(raw)
        encoded = orjson.dumps(value)  # refuses nesting deeper than SAFE_DEPTH
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return NOT_PROVEN
    if raw.count(b":") != encoded.count(b":"):
        return NOT_PROVEN  # a duplicate key was dropped
    return value
