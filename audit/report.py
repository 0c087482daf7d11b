"""What an audit reports: one result per check (which table, compared with what), each
mismatch naming the row, and notes for what could not be proven yet. Pure."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kernel.clock import utc


@dataclass(frozen=True)
class Mismatch:
    check: str
    subject: str  # the row or event, named so an operator can find it: "coding@2", "event 57"
    message: str

    def line(self) -> str:
        return f"[{self.check}] {self.subject}: {self.message}"

    def to_json(self) -> dict[str, str]:
        return {"check": self.check, "subject": self.subject, "message": self.message}


@dataclass
class Findings:
    """One check's results as it runs: how many rows it compared, what differed."""

    name: str
    table: str  # the rows checked
    against: str  # what they are checked against
    checked: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def add(self, subject: str, message: str) -> None:
        self.mismatches.append(Mismatch(self.name, subject, message))

    def note(self, text: str) -> None:
        self.notes.append(text)

    def differ(self, subject: str, source: str, pairs: dict[str, tuple[Any, Any]]) -> None:
        """One mismatch listing every field whose stored value differs from the event's."""
        diffs = [f"{name} is {show(stored)} in the row but {show(logged)} in {source}"
                 for name, (stored, logged) in pairs.items() if not same(stored, logged)]
        if diffs:
            self.add(subject, "; ".join(diffs))

    def by_position(self, what: str, rows: list[dict[str, Any]], events: list[Any],
                    compare: Any) -> None:
        """Rows keyed by the position of the event written with them (alias moves, status
        changes, serving moves): each row against its event, and each event must have its row.
        ``compare(row, event)`` gives the ``differ`` pairs."""
        logged = {e.position: e for e in events}
        for row in rows:
            self.checked += 1
            subject = f"{what} at position {row['position']}"
            event = logged.pop(int(row["position"]), None)
            if event is None:
                self.add(subject, f"no event at that position records this {what}")
                continue
            self.differ(subject, f"the {event.type} event", compare(row, event))
        for position, event in logged.items():
            self.add(f"{what} at position {position}", f"the row is missing; {event.type} recorded it")

    def to_json(self) -> dict[str, Any]:
        return {"check": self.name, "table": self.table, "against": self.against, "ok": self.ok,
                "checked": self.checked, "mismatches": [m.to_json() for m in self.mismatches],
                "notes": list(self.notes), "seconds": round(self.seconds, 3)}


@dataclass
class AuditReport:
    scope: str  # "all", "all since checkpoint 7 (size 1000)" or "adapter coding@7"
    checks: list[Findings]
    started_at: datetime
    finished_at: datetime | None = None
    # Which kind of audit ran and what it covered: {"kind": "full"}, or for an incremental
    # one the checkpoint, the positions re-hashed, the sample's size and seed.
    coverage: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def mismatches(self) -> list[Mismatch]:
        return [m for c in self.checks for m in c.mismatches]

    def to_json(self) -> dict[str, Any]:
        return {"scope": self.scope, "ok": self.ok, "started_at": self.started_at.isoformat(),
                "finished_at": self.finished_at.isoformat() if self.finished_at else None,
                "mismatch_count": len(self.mismatches), "checks": [c.to_json() for c in self.checks],
                **({"coverage": self.coverage} if self.coverage else {})}


def same(stored: Any, logged: Any) -> bool:
    if isinstance(stored, datetime) and isinstance(logged, datetime):
        return utc(stored) == utc(logged)
    return bool(stored == logged)


def show(value: Any) -> str:
    """A value short enough for a one-line mismatch: long text by its digest."""
    if isinstance(value, datetime):
        return utc(value).isoformat()
    text = repr(value)
    if len(text) <= 80:
        return text
    digest = hashlib.sha256(str(value).encode()).hexdigest()[:12]
    return f"<{len(str(value))} chars, sha256 {digest}…>"
