"""The registry's rows against the events written in the same transaction as each of them.

* adapter versions (with their parent and contract links) against ``adapter.registered``;
* status changes and alias moves against ``adapter.status_changed`` / ``alias.moved``
  (both keyed by the event's position, which is the row's primary key);
* base models against ``base_model.registered``.

Every function takes the rows and events already limited to the audit's scope; an event
without its row, or a row without its event, is a finding too.
"""

from __future__ import annotations

from typing import Any

from audit.report import Findings
from events.model import RecordedEvent

Row = dict[str, Any]


def check_adapters(findings: Findings, rows: list[Row], links: dict[str, set[tuple[str, int]]],
                   events: list[RecordedEvent]) -> None:
    logged = {e.payload["adapter_id"]: e for e in events}
    for row in rows:
        findings.checked += 1
        aid = row["adapter_id"]
        event = logged.pop(aid, None)
        if event is None:
            findings.add(aid, "no adapter.registered event registered this version")
            continue
        p = event.payload
        refs = sorted((c["name"], int(c["version"])) for c in p.get("contract_versions", []))
        findings.differ(aid, f"adapter.registered at position {event.position}", {
            "specialist": (row["specialist"], event.metadata.specialist),
            "version": (row["version"], p["version"]),
            "parent_adapter_id": (row["parent_adapter_id"], p["parent_adapter_id"]),
            "base_model": (row["base_model"], p["base_model"]),
            "training_run_id": (row["training_run_id"], p["training_run_id"]),
            "manifest_id": (row["manifest_id"], p["manifest_id"]),
            "hyper": (row["hyper"], p["hyper"]),
            "artifact_sha256": (row["artifact_sha256"], p["artifact_sha256"]),
            "status": (row["status"], p["status"]),
            "gate": ((row["metrics"] or {}).get("gate"), p.get("gate")),
            "registered_by": (row["registered_by"], event.metadata.actor),
            "registered_at": (row["registered_at"], event.recorded_at),
            "event_position": (row["event_position"], event.position),
            "contract links": (sorted(links.get(aid, set())), refs)})
    for aid, event in logged.items():
        findings.add(aid, f"the row is missing; adapter.registered at position {event.position} "
                          "registered it")


def check_status_changes(findings: Findings, rows: list[Row], events: list[RecordedEvent]) -> None:
    def compare(row: Row, event: RecordedEvent) -> dict[str, tuple[Any, Any]]:
        p = event.payload
        return {"adapter_id": (row["adapter_id"], p["adapter_id"]), "status": (row["status"], p["status"]),
                "actor": (row["actor"], event.metadata.actor), "reason": (row["reason"], p["reason"]),
                "changed_at": (row["changed_at"], event.recorded_at)}

    findings.by_position("status change", rows, events, compare)


def check_alias_moves(findings: Findings, rows: list[Row], events: list[RecordedEvent]) -> None:
    def compare(row: Row, event: RecordedEvent) -> dict[str, tuple[Any, Any]]:
        p = event.payload
        return {"specialist": (row["specialist"], p["specialist"]), "alias": (row["alias"], p["alias"]),
                "adapter_id": (row["adapter_id"], p["adapter_id"]),
                "previous_adapter_id": (row["previous_adapter_id"], p["previous_adapter_id"]),
                "actor": (row["actor"], event.metadata.actor), "reason": (row["reason"], p["reason"]),
                "moved_at": (row["moved_at"], event.recorded_at),
                "kind": (row.get("kind", "move"), p.get("kind", "move"))}

    findings.by_position("alias move", rows, events, compare)
    targets: dict[tuple[str, str], str | None] = {}  # the log must agree with itself, too
    for event in sorted(events, key=lambda e: e.position):
        p = event.payload
        key = (p["specialist"], p["alias"])
        if key in targets and targets[key] != p["previous_adapter_id"]:
            findings.add(f"alias move at position {event.position}",
                         f"{key[0]}/{key[1]} says it replaced {p['previous_adapter_id']!r}, but the move "
                         f"before it set {targets[key]!r}")
        targets[key] = p["adapter_id"]


def check_base_models(findings: Findings, rows: list[Row], events: list[RecordedEvent]) -> None:
    logged = {e.payload["name"]: e for e in events}
    for row in rows:
        findings.checked += 1
        event = logged.pop(row["name"], None)
        if event is None:
            findings.add(row["name"], "no base_model.registered event registered this base model")
            continue
        p = event.payload
        findings.differ(row["name"], f"base_model.registered at position {event.position}", {
            "path": (row["path"], p["path"]), "weights_sha256": (row["weights_sha256"], p["weights_sha256"]),
            "config": (row["config"], p["config"]),
            "source": (row.get("source"), p.get("source")),
            "registered_by": (row["registered_by"], event.metadata.actor),
            "registered_at": (row["registered_at"], event.recorded_at),
            "event_position": (row["event_position"], event.position)})
    for name, event in logged.items():
        findings.add(name, f"the row is missing; base_model.registered at position {event.position} "
                           "registered it")

