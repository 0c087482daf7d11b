"""The contract versions in force, compiled once and refreshed after every poll."""

from __future__ import annotations

import logging
from dataclasses import replace

from contract.document import ContractDocument
from contract.evaluate import compile_contract
from contract.rubric import DEFAULT_LIMITS, Limits
from contract.versions import ContractVersion, ContractVersions
from evaluators.model import VersionRef
from evaluators.scoring import ScoringVersion

log = logging.getLogger(__name__)


def compile_version(version: ContractVersion, subject_budget_s: float | None = None) -> ScoringVersion:
    """A stored version (any status) ready to score; raises ContractInvalid if it no longer parses.

    ``subject_budget_s`` bounds the wall time of one subject under this version: the
    rubric's deadline is per expression, so a version with many expressions could take
    that many deadlines per subject. The budget is split evenly across the expressions.
    """
    ref = VersionRef(version.name, version.version, version.content_hash)
    doc = version.parsed()
    return ScoringVersion(ref, compile_contract(doc, subject_limits(doc, subject_budget_s)))


class CompiledVersions:
    """Stored versions compiled on first use, by (name, version): a published version never
    changes, so neither does what it compiles to (the re-evaluator's and the judge
    backlog's cache)."""

    def __init__(self, contracts: ContractVersions, subject_budget_s: float | None) -> None:
        self.contracts, self.subject_budget_s = contracts, subject_budget_s
        self._compiled: dict[tuple[str, int], ScoringVersion] = {}

    def get(self, name: str, version: int) -> ScoringVersion:
        key = (name, version)
        if key not in self._compiled:
            self._compiled[key] = compile_version(self.contracts.get(name, version),
                                                  self.subject_budget_s)
        return self._compiled[key]


def subject_limits(doc: ContractDocument, subject_budget_s: float | None,
                   base: Limits = DEFAULT_LIMITS) -> Limits:
    """The rubric limits under which one subject's expressions together fit the budget."""
    if subject_budget_s is None:
        return base
    ev = doc.evaluation
    expressions = len(ev.criteria) + len(ev.gates) + 1 + (1 if ev.applies_to.when else 0)
    return replace(base, deadline_s=min(base.deadline_s, subject_budget_s / expressions))


class ActiveContracts:
    """Every published (not retired) version, compiled; ``refresh`` re-reads the list.

    Compiling is cached by (name, version, content hash): a published document never
    changes, so a refresh costs one small query unless something was published.
    """

    def __init__(self, contracts: ContractVersions, subject_budget_s: float | None = None) -> None:
        self.contracts, self.subject_budget_s = contracts, subject_budget_s
        self._compiled: dict[tuple[str, int, str], ScoringVersion] = {}
        self.versions: list[ScoringVersion] = []

    def refresh(self) -> list[ScoringVersion]:
        current: list[ScoringVersion] = []
        for version in self.contracts.active():
            key = (version.name, version.version, version.content_hash)
            compiled = self._compiled.get(key)
            if compiled is None:
                try:
                    compiled = self._compiled[key] = compile_version(version, self.subject_budget_s)
                except Exception:
                    # Published documents were valid when published; one that no longer
                    # compiles (an engine change) must not stop scoring under the others.
                    log.exception("cannot compile %s; it scores nothing until fixed", version.ref)
                    continue
            current.append(compiled)
        self.versions = current
        return current
