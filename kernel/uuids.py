"""UUIDs made from their 128-bit value without ``uuid.UUID.__init__``'s argument checks.

``UUID(text)`` strips prefixes and braces and checks lengths in Python, and ``uuid5``
checks its arguments: microseconds that count where one is made for every event or
reward. A caller that already holds a valid value builds the same object here: the two
slots ``UUID`` has, ``int`` and ``is_safe`` (unknown), set as its ``__init__`` sets them.
Pure: no I/O.
"""

from __future__ import annotations

import uuid

_new, _set, _SAFETY_UNKNOWN = object.__new__, object.__setattr__, uuid.SafeUUID.unknown


def uuid_of_int(value: int) -> uuid.UUID:
    """``uuid.UUID(int=value)`` for a ``value`` known to be within 128 bits."""
    made = _new(uuid.UUID)
    _set(made, "int", value)
    _set(made, "is_safe", _SAFETY_UNKNOWN)
    return made
