"""The write path's cost of projecting: each registry write's events appended and projected
in one transaction, against the same kind of write whose rows are applied directly.

The ceiling is the cost of the rows themselves: the events appended, then the very row
changes their projectors give, applied with the same statements ``project_in`` uses
(``apply_in``), only derived off the clock: the clock stops while each projector runs
(its reads included) and starts again for the writes. Projected / direct is then what
deriving the rows through the projector costs, the figure the 5% goal is about. The
old ceiling, the events appended alone (no row written at all), is kept as a second,
labelled figure: it charges the table's own row writes to projecting.

Every side runs in one transaction under the registry lock, as every registry writer's
does (``trainer.journal``), one writer at a time; each time is the whole transaction,
commit included. A projected and a direct write cannot be the same write (the second
would insert the first's rows again), so each round plans two writes of the same shape
(the next two versions of a chain, two alias moves, two firings one cut apart), the
projected and the direct side taking turns at the first; the round's third transaction
appends the projected write's events again, alone, at a rotating place. Drift falls on
every side alike. The events are built before the clock starts, as their writers build
them (types, fields, streams, metadata); the writers' own reads (the next version
number, the alias's current target, the rewards a manifest selects) are on no side, so
the ratios are the projectors' share at its largest.

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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from lineage_build import Shape
from sqlalchemy import Table, func, select
from sqlalchemy.engine import Connection

from events.projections.model import ProjectionSet, Row
from events.projections.sql import Sources, SqlState, apply_in, project_in
from events.server_events import Logged, ServerEvent
from hcp.bootstrap import Container
from kernel.errors import Conflict
from trainer.datasets.events import DatasetFrozen
from trainer.datasets.projections import DATASET_PROJECTIONS, HASHED_BY_WRITER, REWARDS
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


ALONE, DIRECT, READS, PROJECTED = "alone", "direct", "direct with reads", "projected"
SIDES = (ALONE, DIRECT, READS, PROJECTED)


class Clock:
    """Seconds of a transaction, less the spans spent in ``off()`` (deriving the rows)."""

    def __init__(self) -> None:
        self.started, self.off_for = time.perf_counter(), 0.0

    @contextmanager
    def off(self) -> Iterator[None]:
        stopped = time.perf_counter()
        yield
        self.off_for += time.perf_counter() - stopped

    @contextmanager
    def on(self) -> Iterator[None]:
        """Inside ``off()``: this span counts after all (a projector's reads)."""
        resumed = time.perf_counter()
        yield
        self.off_for -= time.perf_counter() - resumed

    def seconds(self) -> float:
        return time.perf_counter() - self.started - self.off_for


class ReadsOnClock(SqlState):
    """The projector's reads of the tables, timed although its run is not: what any writer
    of the same rows must read too (a new version's ancestry closure is its parent's)."""

    def __init__(self, conn: Connection, tables: Callable[[str], Table], sources: Sources,
                 clock: Clock) -> None:
        super().__init__(conn, tables, sources)
        self.clock = clock

    def find(self, table: str, **equal: Any) -> list[Row]:
        with self.clock.on():
            return super().find(table, **equal)


def commit(parts: Container, write: Write, side: str) -> float:
    """Seconds of one transaction appending ``write``'s events and, by ``side``, nothing
    more, their projectors' rows applied directly, or the events projected."""
    clock = Clock()
    with parts.engine.begin() as conn:
        lock_registry(conn)
        later = []
        for step in write:
            done = append(parts.store, conn, step.projections, step.stream, step.event, ACTOR,
                          specialist=SPECIALIST, adapter_version=step.adapter_version)
            if side == ALONE:
                continue
            if step.deferred:
                later.append((step, done))
            else:
                _rows(conn, step, done, side, clock)
        for step, done in later:
            _rows(conn, step, done, side, clock)
    return clock.seconds()


def _rows(conn: Connection, step: Step, done: Logged[Any], side: str, clock: Clock) -> None:
    if side == PROJECTED:
        project_in(conn, step.projections, done, step.sources)
        return
    # project_in's own loop, with each projector's run off the clock (its reads too, on
    # the direct side; on the clock on the side with reads).
    state = (ReadsOnClock(conn, step.projections.table, step.sources or {}, clock) if side == READS
             else SqlState(conn, step.projections.table, step.sources or {}))
    for projection in step.projections.for_event(type(done.event)):
        with clock.off():
            changes = projection.project(done, state)
        apply_in(conn, changes, step.projections.table)


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
        hashed = frozen.content_hash  # the writer hashed the content to make the event
        return [Step(DATASET_PROJECTIONS, specialist_stream(SPECIALIST), frozen,
                     sources={REWARDS: lambda ids: by_id, HASHED_BY_WRITER: lambda: hashed}),
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


def one_repeat(parts: Container, planner: Planner, writes: int) -> dict[str, dict[str, float]]:
    """Per path and side, the median seconds of ``writes`` transactions."""
    out = {}
    for name, plan in PATHS.items():
        times: dict[str, list[float]] = {side: [] for side in SIDES}
        for i in range(writes):
            for side, write in _round([plan(planner) for _ in range(3)], i):
                times[side].append(commit(parts, write, side))
        out[name] = {side: statistics.median(t) for side, t in times.items()}
    return out


ORDERS = ((PROJECTED, DIRECT, READS), (DIRECT, READS, PROJECTED), (READS, PROJECTED, DIRECT))


def _round(writes: list[Write], i: int) -> list[tuple[str, Write]]:
    """Round ``i``'s four transactions: the three writes in order (a chain's next version
    names the one before as its parent), the projected, direct and direct-with-reads
    sides taking turns at each place, and the events of the projected one appended alone
    at a rotating place."""
    sides = list(zip(ORDERS[i % 3], writes, strict=True))
    projected = next(write for side, write in sides if side == PROJECTED)
    sides.insert(i % 4, (ALONE, projected))
    return sides


def warm_up(parts: Container, planner: Planner) -> None:
    for plan in PATHS.values():
        for i in range(3):
            for side, write in _round([plan(planner) for _ in range(3)], i):
                commit(parts, write, side)
