"""Trigger firings exactly as stored, read in bulk for auditors (compared with the
``trigger.fired`` events that wrote them). One query, never one per firing."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine

from trainer.triggers.tables import trigger_firings


class FiringRecords:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def rows(self, run_ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Firings (of the runs ``run_ids``, else all) in event order."""
        query = select(trigger_firings).order_by(trigger_firings.c.event_position)
        wanted = None if run_ids is None else sorted(set(run_ids))
        with self.engine.connect() as conn:
            if wanted is None:
                return [dict(r._mapping) for r in conn.execute(query)]
            by_run = trigger_firings.c.run_id
            return [dict(r._mapping) for start in range(0, len(wanted), 500)
                    for r in conn.execute(query.where(by_run.in_(wanted[start:start + 500])))]
