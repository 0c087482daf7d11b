"""The contract versions in force, compiled once and refreshed after every poll."""

from __future__ import annotations

import logging

from contract.evaluate import compile_contract
from contract.versions import ContractVersion, ContractVersions
from evaluators.model import VersionRef
from evaluators.scoring import ScoringVersion

log = logging.getLogger(__name__)


def compile_version(version: ContractVersion) -> ScoringVersion:
    """A stored version (any status) ready to score; raises ContractInvalid if it no longer parses."""
    ref = VersionRef(version.name, version.version, version.content_hash)
    return ScoringVersion(ref, compile_contract(version.parsed()))


class ActiveContracts:
    """Every published (not retired) version, compiled; ``refresh`` re-reads the list.

    Compiling is cached by (name, version, content hash): a published document never
    changes, so a refresh costs one small query unless something was published.
    """

    def __init__(self, contracts: ContractVersions) -> None:
        self.contracts = contracts
        self._compiled: dict[tuple[str, int, str], ScoringVersion] = {}
        self.versions: list[ScoringVersion] = []

    def refresh(self) -> list[ScoringVersion]:
        current: list[ScoringVersion] = []
        for version in self.contracts.active():
            key = (version.name, version.version, version.content_hash)
            compiled = self._compiled.get(key)
            if compiled is None:
                try:
                    compiled = self._compiled[key] = compile_version(version)
                except Exception:
                    # Published documents were valid when published; one that no longer
                    # compiles (an engine change) must not stop scoring under the others.
                    log.exception("cannot compile %s; it scores nothing until fixed", version.ref)
                    continue
            current.append(compiled)
        self.versions = current
        return current
