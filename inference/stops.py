"""Stop rules: where an answer is complete, so a batch need not run to max_new_tokens.

A stop rule looks at the text generated so far and returns where the answer ends (an
index into the text) once it is complete, else None. A row of a batch then stops early
instead of running to ``max_new_tokens`` while a chatty model explains its code, and the
answer is cut where the check stops reading (which is also what a successor learns:
training answers end there, followed by the end-of-sequence token).
"""

from __future__ import annotations

from collections.abc import Callable


def after_fence(text: str) -> int | None:
    """After the closing ``` of the first fenced block."""
    first = text.find("```")
    if first < 0:
        return None
    close = text.find("```", text.find("\n", first) + 1 if "\n" in text[first:] else len(text))
    return None if close < 0 else close + 3


def after_json_object(text: str) -> int | None:
    """After the brace that closes the first top-level {...} (braces in strings ignored)."""
    start = text.find("{")
    if start < 0:
        return None
    depth, in_str, escaped = 0, False, False
    for i in range(start, len(text)):
        c = text[i]
        if in_str:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def after_line(text: str) -> int | None:
    """At the end of the first line that has something on it (short answers)."""
    start = len(text) - len(text.lstrip())
    end = text.find("\n", start)
    return None if end < 0 or start >= len(text) else end


StopRule = Callable[[str], int | None]
STOPS: dict[str | None, StopRule | None] = {"fence": after_fence, "json": after_json_object,
                                            "line": after_line, None: None}
# A stop rule can only become true on a token that contains one of these characters, so
# the decoding loop asks it only then.
STOP_CHARS = ("`", "}", "]", "\n")


def cut_by_rule(text: str, finish: str, rule: str | None) -> tuple[str, str]:
    """The answer up to where the named stop rule says it is complete (then it stopped):
    what an engine that cannot stop on a rule (vLLM) ran past is cut here."""
    found = STOPS.get(rule) if rule is not None else None
    end = found(text) if found is not None else None
    return (text, finish) if end is None else (text[:end], "stop")
