"""Alias moves beyond their projection: the log must agree with itself.

Each move says which version it replaced; that must be what the move of the same alias
before it set. A row rewritten to hide a move is the projections' finding; a move whose
event contradicts the one before it is this one's.
"""

from __future__ import annotations

from audit.report import Findings
from events.model import RecordedEvent
from trainer.registry.events import AliasMoved

MOVED = AliasMoved.TYPE


def check_alias_chain(findings: Findings, events: list[RecordedEvent]) -> None:
    """``events``: ``alias.moved`` events (others are skipped)."""
    targets: dict[tuple[str, str], str | None] = {}
    for event in sorted(events, key=lambda e: e.position):
        if event.type != MOVED:
            continue
        findings.checked += 1
        p = event.payload
        key = (p["specialist"], p["alias"])
        if key in targets and targets[key] != p["previous_adapter_id"]:
            findings.add(f"alias move at position {event.position}",
                         f"{key[0]}/{key[1]} says it replaced {p['previous_adapter_id']!r}, but the move "
                         f"before it set {targets[key]!r}")
        targets[key] = p["adapter_id"]
