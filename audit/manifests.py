"""The audit's manifest checks: every manifest's examples rebuilt from its rewards and the
events they judged (``manifest_examples``), and every run's recorded examples selected
again from its rebuilt manifest (``training_examples``).

Each reward's example is built once and kept (``trainer.datasets.rebuilds``). In ``hcp
audit all`` the projections' check has already compared every stored manifest with the
row its ``dataset.frozen`` makes (content hash included, from the same rewards): a manifest
it found unaltered is judged from its event, which costs its examples' hashing and not a
read of its long id lists; one it found altered, or a ghost, is rebuilt from its row as
stored, as without that check.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from audit.checks import training
from audit.report import Findings
from audit.sources import AuditSources, Run
from events.model import RecordedEvent
from events.projections.compare import TableCheck
from kernel.errors import Conflict, NotFound
from trainer.datasets.manifest import Manifest
from trainer.datasets.rebuilds import ManifestRebuilds

NAME = "manifest_examples"


def rebuild_manifests(src: AuditSources, f: Findings, rows: Iterable[dict[str, Any]],
                      frozen: Iterable[RecordedEvent], fired: Iterable[RecordedEvent], run: Run) -> None:
    """Each firing's manifest hash against its dataset.frozen, then the examples of every
    manifest in ``rows`` (as stored) rebuilt from its rewards and events."""
    training.check_frozen_hashes(f, training.frozen_hashes(frozen), fired)
    _judge_rows(ManifestRebuilds(src.rewards, src.store), f, rows, run)


def audit_manifests(src: AuditSources, f: Findings, fired: Iterable[RecordedEvent], run: Run,
                    projected: TableCheck | None) -> None:
    """``rebuild_manifests`` of every stored manifest, those that ``projected`` (the
    dataset_manifests check of the same audit; None: there was none) found unaltered
    judged from their events."""
    if projected is None or any(d.kind == "table missing" for d in projected.differences):
        rebuild_manifests(src, f, src.manifests.scan_stored(), src.store.scan_types([training.FROZEN]),
                          fired, run)
        return
    altered = {d.key[0] for d in projected.differences if d.kind in ("differs", "extra") and d.key}
    unjudged = altered | {d.key[0] for d in projected.differences if d.kind == "missing" and d.key}
    unprojected = {d.position for d in projected.differences if d.kind == "unprojectable"}  # no row
    rebuilds = ManifestRebuilds(src.rewards, src.store)
    recorded: dict[str, tuple[int, str]] = {}
    verdicts: dict[str, str | None] = {}  # reported after the firings', as rebuild_manifests does
    for event in src.store.scan_types([training.FROZEN]):
        manifest_id = event.payload["manifest_id"]
        if manifest_id not in verdicts and manifest_id not in unjudged and event.position not in unprojected:
            # the stored row is the one this event makes
            verdicts[manifest_id] = rebuilds.frozen_verdict(event.payload)
            run.progress(NAME, len(verdicts), len(verdicts))
        recorded[manifest_id] = (event.position, event.payload["content_hash"])
    training.check_frozen_hashes(f, recorded, fired)
    for manifest_id, problem in verdicts.items():
        _judge(f, manifest_id, problem)
    _judge_rows(rebuilds, f, src.manifests.stored_rows(altered), run)


def rebuild_frozen(src: AuditSources, f: Findings, frozen: list[RecordedEvent],
                   fired: Iterable[RecordedEvent], projected: TableCheck | None, run: Run) -> None:
    """``audit_manifests`` of some manifests only (an incremental audit's): those the
    ``frozen`` events made, each judged from its event when ``projected`` (their rows'
    check) found its row unaltered, else from its row as stored; and each of ``fired``
    against the hash its manifest's event recorded, or its stored row's."""
    wrong = set() if projected is None else {d.key[0] for d in projected.differences if d.key}
    rebuilds = ManifestRebuilds(src.rewards, src.store)
    recorded = training.frozen_hashes(frozen)
    verdicts: dict[str, str | None] = {}
    for event in sorted(frozen, key=lambda e: e.position):
        manifest_id = event.payload["manifest_id"]
        if manifest_id not in verdicts and manifest_id not in wrong:
            verdicts[manifest_id] = rebuilds.frozen_verdict(event.payload)
            run.progress(NAME, len(verdicts), len(frozen))
    fired = list(fired)
    others = {e.payload["manifest_id"] for e in fired} - set(recorded)
    for row in src.manifests.stored_rows(others):  # older manifests a new firing reused
        recorded[row["manifest_id"]] = (0, row["content_hash"])
    training.check_frozen_hashes(f, recorded, fired)
    for manifest_id, problem in verdicts.items():
        _judge(f, manifest_id, problem)
    _judge_rows(rebuilds, f, src.manifests.stored_rows(wrong & set(recorded)), run)


def _judge_rows(rebuilds: ManifestRebuilds, f: Findings, rows: Iterable[dict[str, Any]], run: Run) -> None:
    for row in rows:
        _judge(f, row["manifest_id"], rebuilds.verdict(row))
        run.progress(NAME, f.checked, f.checked)


def _judge(f: Findings, manifest_id: str, problem: str | None) -> None:
    f.checked += 1
    if problem is not None:
        f.add(f"dataset_manifests manifest_id={manifest_id}",
              f"rebuilt from its rewards and events: {problem}")


def check_training_examples(src: AuditSources, f: Findings, events: list[RecordedEvent]) -> None:
    """Which examples each run trained on, derived again from its rebuilt manifest."""
    rebuilds = ManifestRebuilds(src.rewards, src.store)
    rebuilt: dict[str, Manifest | str] = {}

    def manifest(manifest_id: str) -> Manifest | str:
        if manifest_id not in rebuilt:
            try:
                row = src.manifests.row(manifest_id)
            except NotFound as exc:
                rebuilt[manifest_id] = str(exc)
                return rebuilt[manifest_id]
            found = rebuilds.rebuild(row._mapping)
            rebuilt[manifest_id] = found if found.content_hash == row.content_hash else str(Conflict(
                f"manifest {manifest_id} no longer rebuilds to its content hash {row.content_hash[:12]}… "
                f"(got {found.content_hash[:12]}…)"))
        return rebuilt[manifest_id]

    training.check_selections(f, events, manifest)
