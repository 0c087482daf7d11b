"""Who answers a specialist's requests (now, or at a time): the adapter its serving alias
points to, or, when that alias points nowhere, the bare base model the serving contract
names (as the chat gateway does: ``serving.choice``).

The serving contract is ``HCP_SERVING_CONTRACT``; its version serving the specialist
names the base model and the alias the harness serves the slot from.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from console.views.contracts import readable
from hcp.bootstrap import Container
from kernel.errors import NotFound


@dataclass(frozen=True)
class Serves:
    specialist: str
    contract: str | None  # "default@2": the serving version; None: no version serves it
    alias: str | None  # the alias the harness serves the slot from
    adapter_id: str | None  # where that alias points; None: the bare base answers
    base_model: str | None  # the base the serving version names

    @property
    def bare_base(self) -> bool:
        return self.contract is not None and self.adapter_id is None


def serves(container: Container, specialist: str, at: datetime | None = None) -> Serves:
    name = container.settings.serving_contract
    try:
        move = container.serving.at(name, specialist, at)
    except NotFound:
        return Serves(specialist, None, None, None, None)
    version = container.contracts.get(name, int(move.version or 0))
    document = readable(version)
    slot = document.harness.specialists.get(specialist) if document else None
    alias = slot.adapter_alias if slot else "production"
    try:
        pointed = container.aliases.at(specialist, alias, at)
    except NotFound:
        pointed = None
    return Serves(specialist, version.ref, alias, pointed.adapter_id if pointed else None,
                  document.harness.base_model if document else None)
