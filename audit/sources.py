"""What an audit reads through and how one runs: the owners' ports (built by the
composition root), the timed findings of each check, and the checks both scopes share
(the projections replayed, artifacts re-hashed; manifests rebuilt: ``audit.manifests``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from audit.checkpoint_store import CheckpointStore
from audit.keys import VerifierKey
from audit.nodestore import NodeStore
from audit.report import AuditReport, Findings
from contract.serving import ContractServing
from contract.versions import ContractVersions
from evaluators.rewards import RewardStore
from events.projections.compare import TableCheck
from events.projections.rebuild import Rebuilder
from events.store import EventStore
from kernel.clock import utcnow
from trainer.datasets.manifests import Manifests
from trainer.registry.artifacts import ArtifactCorrupted, ArtifactNotFound, ArtifactStore
from trainer.registry.records import RegistryRecords
from trainer.runs.store import Runs
from trainer.triggers.records import FiringRecords

Progress = Callable[[str, int, int], None]  # (check, done, total)
PAGE = 5000


@dataclass(frozen=True)
class AuditSources:
    """The owners' ports the audit reads through (built by the composition root)."""

    store: EventStore
    contracts: ContractVersions
    serving: ContractServing
    rewards: RewardStore
    registry: RegistryRecords
    manifests: Manifests
    runs: Runs
    firings: FiringRecords
    artifacts: ArtifactStore
    checkpoints: CheckpointStore
    nodes: Callable[[], NodeStore]
    verifier: VerifierKey | None  # the log's public key; None: signatures are not checked
    rebuilder: Rebuilder | None = None  # every projection replayed from the log


class Run:
    """One audit in progress: its findings, timed, and the progress callback."""

    def __init__(self, scope: str, on_progress: Progress | None) -> None:
        self.report = AuditReport(scope, [], utcnow())
        self.on_progress = on_progress

    def check(self, name: str, table: str, against: str, judge: Callable[[Findings], Any]) -> Any:
        findings = Findings(name, table, against)
        started = time.perf_counter()
        self.progress(name, 0, 1)
        result = judge(findings)
        findings.seconds = time.perf_counter() - started
        self.report.checks.append(findings)
        self.progress(name, 1, 1)
        return result

    def add(self, findings: Findings) -> None:
        """A check that ran elsewhere (the projections' replay), as one of this audit's."""
        self.report.checks.append(findings)

    def progress(self, name: str, done: int, total: int) -> None:
        if self.on_progress is not None:
            self.on_progress(name, done, total)

    def finish(self) -> AuditReport:
        self.report.finished_at = utcnow()
        return self.report



def rehash_artifacts(src: AuditSources, f: Findings, rows: list[dict[str, Any]], run: Run) -> None:
    """Each adapter's artifact directory, re-hashed against its content address."""
    for done, row in enumerate(rows, 1):
        f.checked += 1
        try:
            src.artifacts.open_dir(row["artifact_sha256"])
        except ArtifactNotFound:
            f.add(row["adapter_id"], f"artifact {row['artifact_sha256'][:12]}… is missing from the store")
        except ArtifactCorrupted as exc:
            f.add(row["adapter_id"], f"artifact re-hashed: {exc}")
        run.progress("artifacts", done, len(rows))


def check_projections(src: AuditSources, run: Run,
                      scope: Mapping[str, Callable[[dict[str, Any]], bool]] | None = None
                      ) -> dict[str, TableCheck] | None:
    """Every projected table replayed from the log and compared row by row (``hcp rebuild
    --check``): one finding per differing, missing or ghost row, named by table and key.
    Returns each table's check (None: the audit has no rebuilder)."""
    if src.rebuilder is None:
        return None
    started = time.perf_counter()
    tables = None if scope is None else list(scope)
    report = src.rebuilder.check(tables, on_table=lambda c: run.progress(c.table, 1, 1), scope=scope)
    per_table = (time.perf_counter() - started) / max(len(report.checks), 1)
    for check in report.checks:
        run.add(findings_of(src.rebuilder, check, per_table))
    return {check.table: check for check in report.checks}


def findings_of(rebuilder: Rebuilder, check: TableCheck, seconds: float) -> Findings:
    """One projected table's check as one of the audit's findings."""
    types = sorted({cls.TYPE for p in rebuilder.projections if p.name == check.table for cls in p.events})
    found = Findings(check.table, check.table, f"replayed from {', '.join(types)}", checked=check.rows,
                     seconds=seconds)
    for difference in check.differences:
        found.add(f"{check.table} {difference.row}", difference.detail)
    for why, count in sorted(check.bounded.items()):
        found.note(f"{count} value(s) only bounded by the log: {why}")
    return found
