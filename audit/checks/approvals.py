"""Protected aliases: every move of one was approved by a second actor, as the log says.

The rows (protection changes, move requests, decisions) are projections of their
``alias.*`` events, compared by the projections' check. Here the specialist's log must
agree with itself: every ``alias.moved`` of an alias that was protected at that point of
the log comes right after the ``alias.move_approved`` that caused it, by the same actor,
for that alias and target, approved by someone other than the requester. So a move that
slipped past the approval rule is named, and rows rewritten to hide one are named by the
projections.
"""

from __future__ import annotations

from audit.report import Findings
from events.model import RecordedEvent
from trainer.registry.events import (
    AliasMoveApproved,
    AliasMoved,
    AliasMoveRejected,
    AliasMoveRequested,
    AliasProtectionChanged,
)

APPROVAL_TYPES = tuple(cls.TYPE for cls in (AliasProtectionChanged, AliasMoveRequested, AliasMoveApproved,
                                             AliasMoveRejected))


def check_approvals(findings: Findings, events: list[RecordedEvent]) -> None:
    """``events``: the specialists' ``APPROVAL_TYPES`` and ``alias.moved`` events."""
    findings.checked += sum(e.type == AliasMoved.TYPE for e in events)
    _moves_of_protected_aliases_were_approved(findings, events)


def _moves_of_protected_aliases_were_approved(findings: Findings, events: list[RecordedEvent]) -> None:
    protected: dict[tuple[str, str], bool] = {}
    asked: dict[str, RecordedEvent] = {}  # request id -> its alias.move_requested
    previous: RecordedEvent | None = None
    for event in sorted(events, key=lambda e: e.position):
        p = event.payload
        key = (p.get("specialist", ""), p.get("alias", ""))
        if event.type == AliasProtectionChanged.TYPE:
            protected[key] = bool(p["protected"])
        elif event.type == AliasMoveRequested.TYPE:
            asked[p["request_id"]] = event
        elif event.type == AliasMoved.TYPE and protected.get(key):
            problem = _unapproved(event, previous, asked)
            if problem:
                findings.add(f"alias move at position {event.position}",
                             f"{key[0]}/{key[1]} was protected: {problem}")
        previous = event


def _unapproved(move: RecordedEvent, approval: RecordedEvent | None,
                asked: dict[str, RecordedEvent]) -> str | None:
    """Why ``move`` was not the approved move of a protected alias (None: it was)."""
    if approval is None or approval.type != AliasMoveApproved.TYPE \
            or approval.position != move.position - 1:
        return "no alias.move_approved right before the move"
    request = asked.get(approval.payload["request_id"])
    if request is None:
        return f"the approval names request {approval.payload['request_id']}, which no event made"
    r = request.payload
    if (r["specialist"], r["alias"]) != (move.payload["specialist"], move.payload["alias"]):
        return f"the approval is for {r['specialist']}/{r['alias']}"
    if r["kind"] == "move" and r["adapter_id"] != move.payload["adapter_id"]:
        return f"the request asked for {r['adapter_id']}, the move went to {move.payload['adapter_id']}"
    if approval.metadata.actor != move.metadata.actor:
        return f"approved by {approval.metadata.actor}, moved by {move.metadata.actor}"
    if approval.metadata.actor == request.metadata.actor:
        return f"{request.metadata.actor} approved their own request"
    return None
