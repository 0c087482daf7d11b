"""How much of a subject an expression may see: the caps on the input's raw material.

No subject can make an expression expensive by sheer size: at most `MAX_EVENTS` events
in `events` (the first ones), `MAX_TURNS` turns, `MAX_TOOL_CALLS` tool calls, strings of
`MAX_STRING` characters, joined texts of `MAX_TEXT`, `MAX_ITEMS` items per list or map
and payloads nested `MAX_DEPTH` deep; the input's `truncated` says whether any cap applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_EVENTS = 500
MAX_TURNS = 200
MAX_TOOL_CALLS = 200
MAX_STRING = 16 * 1024
MAX_TEXT = 64 * 1024  # the joined user_text / assistant_text
MAX_DEPTH = 12
MAX_ITEMS = 1000


@dataclass
class Caps:
    """Applies the caps to one subject's raw material and remembers whether any applied."""

    truncated: bool = False

    def text(self, value: Any, limit: int = MAX_STRING) -> str:
        text = value if isinstance(value, str) else ""
        if len(text) > limit:
            self.truncated = True
            return text[:limit]
        return text

    def json(self, value: Any, depth: int = 0) -> Any:
        """A copy of free JSON with every cap applied (payloads of `x.*` events are free)."""
        if depth >= MAX_DEPTH:
            self.truncated = True
            return None
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            items = list(value.items())
            self.truncated |= len(items) > MAX_ITEMS
            return {str(k): self.json(item, depth + 1) for k, item in items[:MAX_ITEMS]}
        if isinstance(value, list | tuple):
            self.truncated |= len(value) > MAX_ITEMS
            return [self.json(item, depth + 1) for item in value[:MAX_ITEMS]]
        if value is None or isinstance(value, bool | int | float):
            return value
        return str(value)
