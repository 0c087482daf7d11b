"""Audit: the hash chain's status, signed checkpoints, and the latest ``audit all`` report.

Re-checking the chain reads every event (seconds to minutes on a large log), so it never
runs inside a page request: a person starts it, it runs in a thread of this process, and
the page polls its progress; the last result stays until the next check replaces it.
Checkpoints and the audit report come from the container's checkpoint services where
the server has them (``available`` is False otherwise, and the page says so).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from events.chain import VerifyReport, verify_chain
from events.model import RecordedEvent
from events.store import EventStore
from hcp.bootstrap import Container
from kernel.clock import utcnow


@dataclass
class ChainCheck:
    """One verification of the whole chain, as far as it has got."""

    head: int  # the log's last position when the check started
    started_at: datetime = field(default_factory=utcnow)
    checked: int = 0
    finished_at: datetime | None = None
    report: VerifyReport | None = None
    error: str | None = None

    @property
    def running(self) -> bool:
        return self.finished_at is None

    @property
    def percent(self) -> float:
        return 100.0 if not self.head else round(100 * min(1.0, self.checked / self.head), 1)


class ChainChecks:
    """At most one chain verification at a time per process; the latest one is kept."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.latest: ChainCheck | None = None

    def start(self, store: EventStore) -> ChainCheck:
        """Start a check unless one is running; either way return the current one."""
        with self._lock:
            if self.latest is not None and self.latest.running:
                return self.latest
            check = self.latest = ChainCheck(head=store.head())
        threading.Thread(target=self._run, args=(store, check), name="console-chain-check",
                         daemon=True).start()
        return check

    @staticmethod
    def _run(store: EventStore, check: ChainCheck) -> None:
        def counted(events: Iterator[RecordedEvent]) -> Iterator[RecordedEvent]:
            for event in events:
                check.checked += 1
                yield event

        try:
            check.report = verify_chain(counted(store.iter_all(raw=True)))
        except Exception as exc:  # shown on the page; a failed check must not pass as intact
            check.error = f"{type(exc).__name__}: {exc}"
        finally:
            check.finished_at = utcnow()


def audit_page(container: Container, checks: ChainChecks) -> dict[str, Any]:
    return {"head": container.store.head(), "check": checks.latest,
            "checkpoints": checkpoints(container), "report": latest_report(container)}


def checkpoints(container: Container, limit: int = 20) -> dict[str, Any]:
    """Signed checkpoints, newest first, where the server keeps them (a checkpoint store
    with ``latest()`` and ``page(after, limit)`` at ``container.checkpoint_store``)."""
    store = getattr(container, "checkpoint_store", None)
    if store is None or not hasattr(store, "latest") or not hasattr(store, "page"):
        return {"available": False, "rows": []}
    newest = store.latest()
    if newest is None:
        return {"available": True, "rows": []}
    rows = []
    for stored in reversed(store.page(max(0, newest.position - limit), limit)):
        checkpoint = stored.checkpoint
        rows.append({"size": checkpoint.size, "timestamp": checkpoint.timestamp,
                     "chain_head": checkpoint.chain_head, "origin": checkpoint.origin,
                     "key_id": getattr(stored, "key_id", None)})
    return {"available": True, "rows": rows}


def latest_report(container: Container) -> dict[str, Any]:
    """The latest ``hcp audit all`` report, where the server stores it."""
    service = getattr(container, "audit_reports", None)
    latest = getattr(service, "latest", None)
    if latest is None:
        return {"available": False, "report": None}
    report = latest()
    to_json = getattr(report, "to_json", None)
    return {"available": True, "report": to_json() if to_json else report}
