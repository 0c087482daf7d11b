"""Protected aliases against their ``alias.*`` events: who protected an alias, who asked
for each move of it, and who approved or rejected that.

Each row (protection change, move request, decision) is compared with the event at its
position, and the specialist's log must agree with itself: every ``alias.moved`` of an
alias that was protected at that point of the log comes right after the
``alias.move_approved`` that caused it, by the same actor, for that alias and target,
approved by someone other than the requester. So a move that slipped past the approval
rule, or rows rewritten to hide one, are both named.
"""

from __future__ import annotations

from typing import Any

from audit.report import Findings
from events.model import RecordedEvent

APPROVAL_TYPES = ("alias.protection_changed", "alias.move_requested", "alias.move_approved",
                  "alias.move_rejected")
Row = dict[str, Any]


def check_approvals(findings: Findings, protections: list[Row], requests: list[Row],
                    decisions: list[Row], events: list[RecordedEvent]) -> None:
    """``events``: the specialists' ``APPROVAL_TYPES`` and ``alias.moved`` events."""
    typed = {t: [e for e in events if e.type == t] for t in APPROVAL_TYPES}
    findings.by_position("protection change", protections, typed["alias.protection_changed"],
                         _protection_fields)
    findings.by_position("move request", requests, typed["alias.move_requested"], _request_fields)
    findings.by_position("move decision", decisions,
                         typed["alias.move_approved"] + typed["alias.move_rejected"], _decision_fields)
    _moves_of_protected_aliases_were_approved(findings, events)


def _protection_fields(row: Row, event: RecordedEvent) -> dict[str, tuple[Any, Any]]:
    p = event.payload
    return {"specialist": (row["specialist"], p["specialist"]), "alias": (row["alias"], p["alias"]),
            "protected": (row["protected"], p["protected"]), "actor": (row["actor"], event.metadata.actor),
            "reason": (row["reason"], p["reason"]), "changed_at": (row["changed_at"], event.recorded_at)}


def _request_fields(row: Row, event: RecordedEvent) -> dict[str, tuple[Any, Any]]:
    p = event.payload
    return {"request_id": (row["request_id"], p["request_id"]),
            "specialist": (row["specialist"], p["specialist"]), "alias": (row["alias"], p["alias"]),
            "kind": (row["kind"], p["kind"]), "adapter_id": (row["adapter_id"], p["adapter_id"]),
            "expected_current": (row["expected_current"], p["expected_current"]),
            "requested_by": (row["requested_by"], event.metadata.actor),
            "reason": (row["reason"], p["reason"]), "requested_at": (row["requested_at"], event.recorded_at)}


def _decision_fields(row: Row, event: RecordedEvent) -> dict[str, tuple[Any, Any]]:
    p = event.payload
    return {"request_id": (row["request_id"], p["request_id"]),
            "decision": (row["decision"], event.type.removeprefix("alias.move_")),
            "actor": (row["actor"], event.metadata.actor), "reason": (row["reason"], p["reason"]),
            "decided_at": (row["decided_at"], event.recorded_at)}


def _moves_of_protected_aliases_were_approved(findings: Findings, events: list[RecordedEvent]) -> None:
    protected: dict[tuple[str, str], bool] = {}
    asked: dict[str, RecordedEvent] = {}  # request id -> its alias.move_requested
    previous: RecordedEvent | None = None
    for event in sorted(events, key=lambda e: e.position):
        p = event.payload
        key = (p.get("specialist", ""), p.get("alias", ""))
        if event.type == "alias.protection_changed":
            protected[key] = bool(p["protected"])
        elif event.type == "alias.move_requested":
            asked[p["request_id"]] = event
        elif event.type == "alias.moved" and protected.get(key):
            problem = _unapproved(event, previous, asked)
            if problem:
                findings.add(f"alias move at position {event.position}",
                             f"{key[0]}/{key[1]} was protected: {problem}")
        previous = event


def _unapproved(move: RecordedEvent, approval: RecordedEvent | None,
                asked: dict[str, RecordedEvent]) -> str | None:
    """Why ``move`` was not the approved move of a protected alias (None: it was)."""
    if approval is None or approval.type != "alias.move_approved" \
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
