"""The ingest path's registry check: do the specialists, adapter versions and contract
versions a serving record names exist? (``events.ingest.ReferenceCheck``.)

Built by the composition root from the registry and the contract store, so the event
log, which sits below both, never imports them. Known names are remembered: registry
objects are append-only and never disappear, so a positive answer stays true; an
unknown one is asked again next time (it may have been registered since).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from contract.versions import ContractVersions
from kernel.errors import NotFound
from trainer.registry.registry import Registry

BASE_VERSION = "0"  # "<specialist>@0": the bare base model, served before any adapter
_REMEMBER = 100_000


class RegistryReferences:
    def __init__(self, registry: Registry, contracts: ContractVersions) -> None:
        self.registry, self.contracts = registry, contracts
        self.known: set[tuple[str, str]] = set()

    def __call__(self, kind: str, value: str) -> str | None:
        if (kind, value) in self.known:
            return None
        problem = self._problem(kind, value)
        if problem is None and len(self.known) < _REMEMBER:
            self.known.add((kind, value))
        return problem

    def _problem(self, kind: str, value: str) -> str | None:
        if kind == "specialist":
            return self._missing(lambda: self.registry.specialist(value),
                                 f"no specialist '{value}' in the registry")
        name, _, version = value.rpartition("@")
        if not name or not version.isdigit():
            return f"'{value}' is not NAME@VERSION"
        if kind == "adapter" and version == BASE_VERSION:
            return self._missing(lambda: self.registry.specialist(name),
                                 f"no specialist '{name}' in the registry")
        if kind == "adapter":
            return self._missing(lambda: self.registry.adapter(value),
                                 f"no adapter version '{value}' in the registry")
        return self._missing(lambda: self.contracts.get(name, int(version)),
                             f"no contract version '{value}'")

    @staticmethod
    def _missing(lookup: Callable[[], Any], message: str) -> str | None:
        try:
            lookup()
        except NotFound:
            return message
        return None
