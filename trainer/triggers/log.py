"""Reading past firings: why and by whom each training run was started (lineage reads)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from kernel.db import reading
from trainer.triggers.firing import firing_from_row
from trainer.triggers.model import Firing
from trainer.triggers.tables import trigger_firings


class FiringLog:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def by_ids(self, firing_ids: Iterable[str],
               conn: Connection | None = None) -> dict[str, Firing]:
        """The stored firings among ``firing_ids``, by id."""
        ids = sorted(set(firing_ids))
        found: dict[str, Firing] = {}
        with reading(self.engine, conn) as c:
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                rows = c.execute(select(trigger_firings)
                                    .where(trigger_firings.c.firing_id.in_(chunk)))
                found.update((row.firing_id, firing_from_row(row, created=True)) for row in rows)
        return found
