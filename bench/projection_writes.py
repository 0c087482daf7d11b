"""The write path's cost of projecting: each registry write's events appended alone,
against the same events appended and projected, in the same kind of transaction.

Both sides run in one transaction under the registry lock, as every registry writer's
does (``trainer.journal``), one writer at a time, interleaved A B, B A, ... so drift falls
on both; each time is the whole transaction, commit included. Projecting is exactly
``write_in``'s second half: the same ``append_in`` on both sides, then ``project_in`` on
one. The events are built before the clock starts, as their writers build them (types,
fields, streams, metadata); the writers' own reads (the next version number, the alias's
current target, the rewards a manifest selects) are on neither side, so the ratio is the
projectors' share at its largest.

* register: ``adapter.registered`` (four tables: the version, its contract links, its
  ancestry closure from the parent's rows), in chains up to ``CHAIN`` deep;
* alias move: ``alias.moved`` (one row);
* firing: ``dataset.frozen`` (the manifest, a member row per reward, per-version counts),
  ``trigger.fired`` and ``training.queued``, projected in the firing's order.

Appending alone leaves events that no table holds, so this runs on a scratch database of
its own, built like the lineage bench's at a small shape (``WORLD``), then dropped.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lineage_build import Shape
from sqlalchemy import func, select

from events.projections.model import ProjectionSet
from events.projections.sql import Sources, project_in
from events.server_events import ServerEvent
from hcp.bootstrap import Container
from kernel.errors import Conflict
from trainer.datasets.events import DatasetFrozen
from trainer.datasets.projections import DATASET_PROJECTIONS, REWARDS
from trainer.datasets.tables import dataset_manifests
from trainer.journal import append, lock_registry, run_stream, specialist_stream
from trainer.registry.events import AdapterRegistered, AliasMoved, ContractLink
from trainer.registry.in_transaction import adapter_in
from trainer.registry.projections import ADAPTER_PROJECTIONS, ALIAS_PROJECTIONS
from trainer.registry.tables import adapter_versions
from trainer.runs.events import TrainingQueued
from trainer.runs.projections import RUN_PROJECTIONS
from trainer.triggers.events import TriggerFired
from trainer.triggers.projections import TRIGGER_PROJECTIONS

WORLD = Shape(events=20_000, rewards=2_000, chains=4, length=5)
SPECIALIST = "coding"
ACTOR = "bench"
CHAIN = 50  # a registered chain restarts at a root after this many versions (lineage: 51)
WINDOW = WORLD.rewards // 5  # reward positions a firing's manifest spans


@dataclass(frozen=True)
class Step:
    """One event of a write; ``deferred``: projected after the later steps (a firing's row
    names the run queued after it), as its writer does."""

    projections: ProjectionSet
    stream: str
    event: ServerEvent
    adapter_version: str | None = None
    sources: Sources | None = None
    deferred: bool = False


Write = list[Step]


def commit(parts: Container, write: Write, project: bool) -> float:
    """Seconds of one transaction appending ``write``'s events (and projecting them)."""
    started = time.perf_counter()
    with parts.engine.begin() as conn:
        lock_registry(conn)
        later = []
        for step in write:
            done = append(parts.store, conn, step.projections, step.stream, step.event, ACTOR,
                          specialist=SPECIALIST, adapter_version=step.adapter_version)
            if project and step.deferred:
                later.append((step, done))
            elif project:
                project_in(conn, step.projections, done, step.sources)
        for step, done in later:
            project_in(conn, step.projections, done, step.sources)
    return time.perf_counter() - started


class Planner:
    """The next write of each path, built as its writer builds it (outside the clock)."""

    def __init__(self, parts: Container) -> None:
        self.parts = parts
        av = adapter_versions.c
        with parts.engine.connect() as conn:
            self.version = int(conn.execute(select(func.max(av.version))
                                            .where(av.specialist == SPECIALIST)).scalar() or 0)
            ids = list(conn.execute(select(av.adapter_id).where(av.specialist == SPECIALIST)
                                    .order_by(av.version.desc()).limit(2)).scalars())
            self.template = adapter_in(conn, ids[0])
        self.parent: str | None = ids[0]
        self.depth = 0
        self.targets, self.current = ids, None  # the alias "bench" starts unset
        self.cut = self.parts.rewards.head()

    def register(self) -> Write:
        t, run_id = self.template, self._queued_run()
        self.version += 1
        if self.depth >= CHAIN:
            self.parent, self.depth = None, 0
        adapter_id = f"{SPECIALIST}@{self.version}"
        event = AdapterRegistered(
            adapter_id=adapter_id, version=self.version, parent_adapter_id=self.parent,
            base_model=t.base_model, training_run_id=run_id, manifest_id=t.manifest_id,
            contract_versions=[ContractLink(name=c.name, version=c.version) for c in t.contract_versions],
            hyper=t.hyper, artifact_sha256=t.artifact_sha256, status="candidate",
            gate=t.metrics.get("gate"), metrics=t.metrics, artifact_uri=t.artifact_uri)
        self.parent, self.depth = adapter_id, self.depth + 1
        return [Step(ADAPTER_PROJECTIONS, specialist_stream(SPECIALIST), event, adapter_id)]

    def alias_move(self) -> Write:
        target = self.targets[0] if self.current != self.targets[0] else self.targets[1]
        event = AliasMoved(specialist=SPECIALIST, alias="bench", adapter_id=target,
                           previous_adapter_id=self.current, reason="bench", kind="move")
        self.current = target
        return [Step(ALIAS_PROJECTIONS, specialist_stream(SPECIALIST), event, target)]

    def firing(self) -> Write:
        frozen, records = self._next_manifest()
        firing_id, run_id = str(uuid.uuid4()), str(uuid.uuid4())
        fired = TriggerFired(firing_id=firing_id, run_id=run_id, policy="manual", reason="bench",
                             parent_adapter_id=None, dataset_cut=frozen.cut_to, cut_from=frozen.cut_from,
                             manifest_id=frozen.manifest_id, manifest_hash=frozen.content_hash)
        queued = TrainingQueued(run_id=run_id, parent_adapter_id=None, base_model=self.template.base_model,
                                manifest_id=frozen.manifest_id, firing_id=firing_id, hyper={"steps": 1},
                                reason="bench", gate={}, total_steps=1)
        by_id = {str(r.reward_id): r for r in records}
        return [Step(DATASET_PROJECTIONS, specialist_stream(SPECIALIST), frozen,
                     sources={REWARDS: lambda ids: [by_id[i] for i in ids]}),
                Step(TRIGGER_PROJECTIONS, specialist_stream(SPECIALIST), fired, deferred=True),
                Step(RUN_PROJECTIONS, run_stream(run_id), queued)]

    def _queued_run(self) -> str:
        """A queued run for the version to name (the table's foreign key wants one each)."""
        run_id, t = str(uuid.uuid4()), self.template
        with self.parts.engine.begin() as conn:
            lock_registry(conn)
            self.parts.runs.create_in(conn, {
                "run_id": run_id, "specialist": SPECIALIST, "parent_adapter_id": None,
                "base_model": t.base_model, "manifest_id": t.manifest_id, "firing_id": str(uuid.uuid4()),
                "hyper": t.hyper, "gate": {}, "total_steps": 1, "created_by": ACTOR}, "bench")
        return run_id

    def _next_manifest(self) -> tuple[DatasetFrozen, list[Any]]:
        """The manifest a firing at the next cut would freeze: frozen in a transaction that
        is rolled back, so only its event is kept (a new cut each time: a new content hash)."""
        while self.cut > WINDOW:
            cut_to, self.cut = self.cut, self.cut - 1
            with self.parts.engine.connect() as conn:
                with conn.begin() as tx:
                    try:
                        manifest_id, manifest = self.parts.manifests.freeze_in(
                            conn, SPECIALIST, None, cut_to - WINDOW, cut_to, ACTOR)
                    except Conflict:
                        continue  # no example in this window
                    finally:
                        tx.rollback()
                taken = conn.execute(select(dataset_manifests.c.manifest_id).where(
                    dataset_manifests.c.content_hash == manifest.content_hash)).first()
            if taken is None:
                frozen = DatasetFrozen(manifest_id=manifest_id, specialist=SPECIALIST,
                                       cut_from=cut_to - WINDOW, cut_to=cut_to,
                                       reward_ids=list(manifest.reward_ids),
                                       examples_sha256=manifest.examples_sha256,
                                       content_hash=manifest.content_hash)
                return frozen, self.parts.rewards.by_ids(manifest.reward_ids)
        raise SystemExit(f"out of distinct firing cuts: fewer writes, or a larger {WORLD}")


PATHS: dict[str, Callable[[Planner], Write]] = {
    "register adapter version": Planner.register,
    "move alias": Planner.alias_move,
    "trigger firing (3 events)": Planner.firing,
}


def one_repeat(parts: Container, planner: Planner, writes: int) -> dict[str, tuple[float, float]]:
    """Per path: (median seconds appended alone, median seconds appended and projected)."""
    out = {}
    for name, plan in PATHS.items():
        alone: list[float] = []
        projected: list[float] = []
        for i in range(writes):
            write = plan(planner)
            for project in ((False, True) if i % 2 == 0 else (True, False)):
                (projected if project else alone).append(commit(parts, write, project))
        out[name] = (statistics.median(alone), statistics.median(projected))
    return out


def warm_up(parts: Container, planner: Planner) -> None:
    for plan in PATHS.values():
        for _ in range(3):
            write = plan(planner)
            commit(parts, write, False)
            commit(parts, write, True)
