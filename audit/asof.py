"""As of a time T: where every alias pointed and which contract versions were active.

Both come from append-only history (alias moves, the contract versions' publish and
retire times), so the answer for a past T never changes once T has passed.
"""

from __future__ import annotations

from datetime import datetime

from audit.views import AliasAt, AsOfOut, ContractAt
from contract.versions import ContractVersions
from kernel.clock import utc
from trainer.registry.aliases import Aliases


class AsOf:
    def __init__(self, aliases: Aliases, contracts: ContractVersions) -> None:
        self.aliases, self.contracts = aliases, contracts

    def at(self, moment: datetime) -> AsOfOut:
        """Every alias's target and every active (published, not yet retired) contract
        version at ``moment`` (naive times are taken as UTC)."""
        moment = utc(moment)
        return AsOfOut(
            at=moment,
            aliases=[AliasAt(specialist=m.specialist, alias=m.alias, adapter_id=m.adapter_id or "",
                             moved_at=m.moved_at, moved_by=m.actor, position=m.position)
                     for m in self.aliases.all_at(moment)],
            contracts=[ContractAt(name=v.name, version=v.version, content_hash=v.content_hash,
                                  published_at=utc(v.published_at or moment))
                       for v in self.contracts.active_at(moment)])
