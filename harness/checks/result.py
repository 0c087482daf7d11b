"""What a check found in an answer: pass/fail, named sub-scores, partial credit."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

FENCE = re.compile(r"```[a-zA-Z0-9_-]*\n(.*?)(?:```|$)", re.S)


@dataclass(frozen=True)
class CheckResult:
    """``passed``: the task's own definition of done. ``partial``: credit in [0, 1] for how
    close a failing answer came (1.0 when passed), so a rubric can tell "nearly" from
    "nothing". ``scores``: the sub-scores, flat and in [0, 1], for rubrics that want them.
    ``tool_call``: the tool call the answer made, when the check parsed one."""

    kind: str
    passed: bool
    partial: float
    scores: dict[str, float] = field(default_factory=dict)
    detail: str = ""  # short and human-readable: why it failed
    tool_call: dict[str, Any] | None = None

    def payload(self) -> dict[str, Any]:
        """The ``x.check`` event's payload (docs/events.md)."""
        return {"kind": self.kind, "passed": self.passed, "partial": float(self.partial),
                "scores": {k: float(v) for k, v in sorted(self.scores.items())},
                "detail": self.detail}


def extract_block(answer: str) -> str:
    """The first fenced block's body, or the whole answer when there is none."""
    m = FENCE.search(answer)
    return (m.group(1) if m else answer).strip()
