"""Rubric error messages without event text, for keys that may not read the events.

A rubric's run-time error is the CEL library's message, and that can quote the value it
failed on: ``{'x': 1.0}[turn.text]`` fails with ``no such key: '<the user's text>'``.
Reward records keep the message as it was made (they are the record), and whoever serves
one to a key without the right to read the subject's events shows this form instead: the
item (which criterion, gate or expression), the kind (runtime, type, range, budget,
deadline, internal) and the message only when it is one of the rubric's own texts, which
name types and limits, never values. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# Messages made by contract/rubric.py from the expression and its limits alone. Anything
# else (the CEL library's texts, an out-of-range score's value, internal errors) may
# carry event content.
_OWN_TEXTS = re.compile(
    r"evaluation budget of \d+ units exceeded"
    r"|evaluation deadline exceeded"
    r"|expected a number in \[0, 1\], got [A-Za-z_]+"
    r"|expected a bool, got [A-Za-z_]+"
    r"|division by zero in CEL expression")


def names_no_event_text(message: str) -> bool:
    """Whether ``message`` is one of the rubric's own texts (no value of the subject in it)."""
    return _OWN_TEXTS.fullmatch(message) is not None


def withheld_message(kind: str = "") -> str:
    what = f"a {kind} error" if kind else "an error"
    return (f"{what} (its text is withheld: it may quote event content, and only keys that "
            "may read the subject's events see it)")


def without_event_text(error: Mapping[str, str]) -> dict[str, str]:
    """An error record (``item``, ``message``, ``kind``, …) safe for any reader of rewards."""
    message = str(error.get("message", ""))
    if names_no_event_text(message):
        return dict(error)
    return {**error, "message": withheld_message(str(error.get("kind", "")))}


def message_without_event_text(item: str, message: str) -> str:
    """``item: message`` as a one-line sample, the message withheld unless it is safe."""
    shown = message if names_no_event_text(message) else withheld_message()
    return f"{item}: {shown}" if item else shown
