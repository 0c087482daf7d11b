"""Trigger firings, training runs and dataset manifests against the log.

* a firing row against its ``trigger.fired`` event (by firing id);
* a run (the trainer's one mutable projection) against the replay of its stream's
  ``training.*`` events: status, attempt, adapter and error as the log leaves them;
* a manifest: its stored content must still hash to its content hash, and that hash must
  be the ``manifest_hash`` the ``trigger.fired`` event that froze it carries (rebuilding
  its examples from rewards and events is the auditor's I/O, see ``audit.auditor``).
"""

from __future__ import annotations

from typing import Any

from audit.report import Findings
from events.model import RecordedEvent
from trainer.datasets.manifest import manifest_hash
from trainer.datasets.manifests import stored_content

Row = dict[str, Any]
RUN_TYPES = ("training.queued", "training.started", "training.succeeded", "training.failed",
             "training.requeued")


def check_firings(findings: Findings, rows: list[Row], events: list[RecordedEvent]) -> None:
    logged = {e.payload["firing_id"]: e for e in events}
    for row in rows:
        findings.checked += 1
        subject = f"firing {row['firing_id']}"
        event = logged.pop(row["firing_id"], None)
        if event is None:
            findings.add(subject, "no trigger.fired event records this firing")
            continue
        p = event.payload
        findings.differ(subject, f"trigger.fired at position {event.position}", {
            "specialist": (row["specialist"], event.metadata.specialist),
            "parent_key": (row["parent_key"], p["parent_adapter_id"] or "root"),
            "dataset_cut": (row["dataset_cut"], p["dataset_cut"]), "policy": (row["policy"], p["policy"]),
            "reason": (row["reason"], p["reason"]), "run_id": (row["run_id"], p["run_id"]),
            "fired_by": (row["fired_by"], event.metadata.actor),
            "fired_at": (row["fired_at"], event.recorded_at),
            "event_position": (row["event_position"], event.position),
            "rerun": (row.get("rerun", 0), p.get("rerun", 0))})
    for firing_id, event in logged.items():
        findings.add(f"firing {firing_id}", f"the row is missing; trigger.fired at position {event.position} "
                                            "recorded it")


def replay_run(events: list[RecordedEvent]) -> dict[str, Any]:
    """A run's fields as its ``training.*`` events leave them (first must be queued)."""
    first = events[0].payload
    state: dict[str, Any] = {
        "specialist": events[0].metadata.specialist, "parent_adapter_id": first["parent_adapter_id"],
        "base_model": first["base_model"], "manifest_id": first["manifest_id"],
        "firing_id": first["firing_id"], "hyper": first["hyper"], "created_by": events[0].metadata.actor,
        "status": "queued", "attempts": 0, "adapter_id": None, "error": None, "gate_outcome": None}
    for event in events[1:]:
        p, kind = event.payload, event.type.removeprefix("training.")
        if kind == "started":
            state.update(status="running", attempts=p["attempt"], error=None)
        elif kind == "requeued":
            state.update(status="queued", attempts=0, error=None, adapter_id=None)
        elif kind in ("succeeded", "failed"):  # a success carries what the gate made of it
            state.update(status=kind, attempts=p["attempt"], adapter_id=p.get("adapter_id"),
                         error=p.get("error"), gate_outcome=p.get("status"))
    return state


def check_runs(findings: Findings, rows: list[Row], events: list[RecordedEvent]) -> None:
    streams: dict[str, list[RecordedEvent]] = {}
    for event in sorted(events, key=lambda e: e.position):
        streams.setdefault(event.payload["run_id"], []).append(event)
    for row in rows:
        findings.checked += 1
        subject = f"run {row['run_id']}"
        logged = streams.pop(row["run_id"], None)
        if not logged or logged[0].type != "training.queued":
            findings.add(subject, "no training.queued event created this run")
            continue
        state = replay_run(logged)
        findings.differ(subject, f"its training.* events (last at position {logged[-1].position})",
                        {name: (row.get(name), value) for name, value in state.items()})
    for run_id, logged in streams.items():
        findings.add(f"run {run_id}", f"the row is missing; training.* events at positions "
                                      f"{logged[0].position}.. record it")


def check_manifests(findings: Findings, rows: list[Row], fired: list[RecordedEvent]) -> None:
    frozen: dict[str, list[RecordedEvent]] = {}
    for event in fired:
        frozen.setdefault(event.payload["manifest_id"], []).append(event)
    for row in rows:
        findings.checked += 1
        subject = f"manifest {row['manifest_id']}"
        rehashed = manifest_hash(stored_content(row))
        if rehashed != row["content_hash"]:
            findings.add(subject, f"its stored content (reward ids, subjects, split, cut) hashes to "
                                  f"{rehashed[:12]}…, not to its content_hash {row['content_hash'][:12]}…")
        events = frozen.get(row["manifest_id"], [])
        if not events:
            findings.add(subject, "no trigger.fired event froze this manifest")
        for event in events:
            if event.payload["manifest_hash"] != row["content_hash"]:
                findings.add(subject, f"trigger.fired at position {event.position} froze content hash "
                                      f"{event.payload['manifest_hash'][:12]}…, the row says "
                                      f"{row['content_hash'][:12]}…")
