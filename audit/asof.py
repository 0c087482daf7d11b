"""As of a time T: where every alias pointed and which contract versions were active.

Both are read up to one cut of the log, the position of its last event recorded at or
before T (events/cut.py), in one snapshot, so they describe the same moment; the log is
append-only, so the answer for a T that has passed never changes.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.engine import Engine

from audit.views import AliasAt, AsOfOut, ContractAt
from contract.as_of import active_in
from events.cut import position_at
from kernel.clock import utc
from trainer.registry.aliases import all_moves_in


class AsOf:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def at(self, moment: datetime) -> AsOfOut:
        """Every alias's target and every active (published, not yet retired) contract
        version at ``moment`` (naive times are taken as UTC)."""
        moment = utc(moment)
        with self.engine.connect() as conn:
            upto = position_at(conn, moment)
            moves, versions = all_moves_in(conn, upto), active_in(conn, upto)
        return AsOfOut(
            at=moment,
            aliases=[AliasAt(specialist=m.specialist, alias=m.alias, adapter_id=m.adapter_id or "",
                             moved_at=m.moved_at, moved_by=m.actor, position=m.position)
                     for m in moves],
            contracts=[ContractAt(name=v.name, version=v.version, content_hash=v.content_hash,
                                  published_at=utc(v.published_at or moment))
                       for v in versions])
