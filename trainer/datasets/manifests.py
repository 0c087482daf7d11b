"""Freezing dataset manifests and rebuilding their examples (the manifests table's owner).

A manifest is frozen when a trigger fires (inside the firing's transaction) and rebuilt
in the worker that trains on it; both read the same append-only rewards and events, so
both produce the same bytes, and the worker refuses to train when the rebuilt content
hash differs from the stored one. Rewards and events are read through their owners'
ports (the reward store, the event store), never from their tables.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sqlalchemy import select, tuple_
from sqlalchemy.engine import Connection, Engine

from contract.subject import Subject
from evaluators.model import RewardRecord
from evaluators.rewards import RewardStore
from events.model import RecordedEvent
from events.store import EventStore
from kernel.db import reading
from kernel.errors import Conflict, NotFound
from trainer.datasets.events import DatasetFrozen
from trainer.datasets.leaks import Leak, Reserved, Sides, held_out_leaks, keep_sides
from trainer.datasets.manifest import (
    HELD_OUT,
    TRAIN,
    EventView,
    JudgedSubject,
    Manifest,
    RewardRow,
    assemble,
    manifest_hash,
    select_rewards,
)
from trainer.datasets.members import ManifestIndex
from trainer.datasets.projections import DATASET_PROJECTIONS, HASHED_BY_WRITER, REWARDS
from trainer.datasets.tables import dataset_manifests
from trainer.journal import specialist_stream, write
from trainer.registry.ancestry import Ancestry, adapters_in

_ID_CHUNK = 500


class Manifests:
    def __init__(self, engine: Engine, rewards: RewardStore, store: EventStore) -> None:
        self.engine, self.rewards, self.store = engine, rewards, store

    def freeze_in(self, conn: Connection, specialist: str, contract: str | None,
                  cut_from: int, cut_to: int, actor: str = "system:triggers",
                  parent: str | None = None) -> tuple[str, Manifest]:
        """The manifest of the eligible rewards in (cut_from, cut_to], and of every held-out
        one up to ``cut_to`` (the gate compares on the whole held-out set, however little
        new data a run trains on), stored once by content hash inside ``conn``'s transaction.

        From a parent's cut (``cut_from > 0``) the train side holds only subjects first
        rewarded after it: a newly published contract version re-scores old subjects at
        new positions, and those are what the parent already learned from, not new data
        (the trigger counts the same way). The held-out side keeps each subject's latest
        reward, so the gate judges under the newest version.

        Each reward is used on its subject's side only (``leaks.keep_sides``): the side its
        first reward recorded, and never the train side for a subject a gate of
        ``parent``'s lineage held out (nor the held-out side for one it trained on).

        Raises:
            Conflict: no reward in the range yields a training example.
        """
        if cut_from == 0:
            records = self.rewards.eligible(specialist, contract, 0, cut_to, conn)
        else:
            records = (self.rewards.eligible(specialist, contract, 0, cut_to, conn, split=HELD_OUT)
                       + self.rewards.eligible(specialist, contract, cut_from, cut_to, conn,
                                               split=TRAIN, new_subjects=True))
        rows = [reward_row(r) for r in records]
        first = self.rewards.first_sides({r.subject_id for r in rows}, conn)
        reserved = Reserved.of(sides for _, sides in self.lineage(parent, conn))
        rewards = select_rewards(keep_sides(rows, first, reserved))
        manifest = assemble(specialist, cut_from, cut_to, rewards, self._events(rewards, conn))
        if not manifest.examples:
            raise Conflict(f"no eligible reward of '{specialist}' in positions "
                           f"({cut_from}, {cut_to}] yields a training example")
        digest = manifest.content_hash
        existing = conn.execute(select(dataset_manifests.c.manifest_id)
                                .where(dataset_manifests.c.content_hash == digest)).scalar()
        if existing is not None:
            return str(existing), manifest
        manifest_id = str(uuid.uuid4())
        by_id = {str(r.reward_id): r for r in records}
        write(self.store, conn, DATASET_PROJECTIONS, specialist_stream(specialist), DatasetFrozen(
            manifest_id=manifest_id, specialist=specialist, cut_from=cut_from, cut_to=cut_to,
            reward_ids=list(manifest.reward_ids), examples_sha256=manifest.examples_sha256,
            content_hash=digest), actor, specialist=specialist,
            sources={REWARDS: lambda ids: by_id, HASHED_BY_WRITER: lambda: digest})
        return manifest_id, manifest

    def lineage(self, adapter_id: str | None,
                conn: Connection | None = None) -> list[tuple[str, Sides]]:
        """The version and each of its ancestors (nearest first), with its manifest's sides
        (what it trained on, what its gate held out); empty for None (a root's parent)."""
        if adapter_id is None:
            return []
        with reading(self.engine, conn) as c:
            chain = Ancestry(self.engine).ancestors(adapter_id, c)
            manifest_of = {a.adapter_id: a.manifest_id for a in adapters_in(c, chain)}
            sides = ManifestIndex(self.engine).sides(manifest_of.values(), c)
        return [(a, sides.get(manifest_of[a], Sides())) for a in chain if a in manifest_of]

    def sides(self, manifest_ids: Iterable[str]) -> dict[str, Sides]:
        """Each manifest's subjects by side (``ManifestIndex.sides``)."""
        return ManifestIndex(self.engine).sides(manifest_ids)

    def leak_sides(self, manifest_ids: Iterable[str]) -> dict[str, Sides]:
        """Each manifest's sides as far as a leak can be made of them (``ManifestIndex.leak_sides``)."""
        return ManifestIndex(self.engine).leak_sides(manifest_ids)

    def leaks(self, manifest_id: str, parent: str | None, label: str) -> list[Leak]:
        """The held-out invariant for a run on ``manifest_id`` from ``parent`` (``label``
        names it): its train members against its own gate's and every ancestor's."""
        own = self.sides([manifest_id])[manifest_id]
        gates = [(label, own.held_out), *((a, s.held_out) for a, s in self.lineage(parent))]
        return held_out_leaks(label, own.train, gates)

    def row(self, manifest_id: str, conn: Connection | None = None) -> Any:
        """The stored manifest row (reward ids, cut, split counts, hashes)."""
        if conn is None:
            with self.engine.connect() as own:
                return self.row(manifest_id, own)
        row = conn.execute(select(dataset_manifests)
                           .where(dataset_manifests.c.manifest_id == manifest_id)).first()
        if row is None:
            raise NotFound(f"no dataset manifest '{manifest_id}'")
        return row

    def stored_rows(self, manifest_ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Manifests (those of ``manifest_ids``, else all) exactly as stored, for auditors."""
        query = select(dataset_manifests).order_by(dataset_manifests.c.created_at)
        wanted = None if manifest_ids is None else sorted(set(manifest_ids))
        with self.engine.connect() as conn:
            if wanted is None:
                return [dict(r._mapping) for r in conn.execute(query)]
            rows: list[dict[str, Any]] = []
            for start in range(0, len(wanted), _ID_CHUNK):
                chunk = query.where(dataset_manifests.c.manifest_id.in_(wanted[start:start + _ID_CHUNK]))
                rows += [dict(r._mapping) for r in conn.execute(chunk)]
            return rows

    def scan_stored(self, page: int = 20) -> Iterator[dict[str, Any]]:
        """Every stored manifest as ``stored_rows`` gives it, in the same order, read a
        page at a time (a manifest's id lists can be long: all of them need not fit)."""
        m = dataset_manifests.c
        query = select(dataset_manifests).order_by(m.created_at, m.manifest_id).limit(page)
        after: tuple[Any, Any] | None = None
        while True:
            chunk = query if after is None else query.where(tuple_(m.created_at, m.manifest_id) > after)
            with self.engine.connect() as conn:
                rows = [dict(r._mapping) for r in conn.execute(chunk)]
            if not rows:
                return
            yield from rows
            after = (rows[-1]["created_at"], rows[-1]["manifest_id"])

    def cut_to(self, manifest_id: str, conn: Connection | None = None) -> int:
        return int(self.row(manifest_id, conn).cut_to)

    def stored_hash_ok(self, manifest_id: str) -> bool:
        """Whether the stored content still hashes to the stored content hash."""
        row = self.row(manifest_id)
        return manifest_hash(stored_content(row)) == row.content_hash

    def rebuild(self, manifest_id: str) -> Manifest:
        """The examples of a stored manifest, rebuilt from its reward and event ids.

        Raises:
            Conflict: the rebuilt manifest does not hash to the stored one.
        """
        row = self.row(manifest_id)
        rewards = [reward_row(r) for r in self.rewards.by_ids(row.reward_ids)]
        manifest = assemble(row.specialist, row.cut_from, row.cut_to, rewards, self._events(rewards))
        if manifest.content_hash != row.content_hash:
            raise Conflict(f"manifest {manifest_id} no longer rebuilds to its content hash "
                           f"{row.content_hash[:12]}… (got {manifest.content_hash[:12]}…)")
        return manifest

    def _closer(self, kind: str, stream_id: str, events: list[RecordedEvent]) -> RecordedEvent | None:
        """The event that closed the subject, which the rubric read (what the user did
        next): an episode's last event; a turn's next event in its stream."""
        if not events:
            return None
        if kind != "turn":
            return events[-1]
        following = self.store.read_stream(stream_id, events[-1].stream_seq, 1)
        return following[0] if following else None

    def judged_subjects(self, reward_ids: Sequence[str]) -> dict[str, JudgedSubject]:
        """Each reward's subject as the evaluator saw it (full events, upcast), by reward id."""
        rewards = self.rewards.by_ids(reward_ids)
        found = self.store.get_many(e for r in rewards for e in r.event_ids)
        judged: dict[str, JudgedSubject] = {}
        for reward in rewards:
            events = sorted((found[e] for e in reward.event_ids if e in found),
                            key=lambda e: e.stream_seq)
            subject = Subject(reward.subject_id, reward.subject_kind, reward.stream_id, tuple(events),
                              self._closer(reward.subject_kind, reward.stream_id, events))
            judged[str(reward.reward_id)] = JudgedSubject(
                str(reward.reward_id), subject, reward.contract_name, reward.contract_version,
                reward.contract_hash)
        return judged

    def _events(self, rewards: Iterable[RewardRow],
                conn: Connection | None = None) -> dict[str, EventView]:
        found = self.store.get_many((e for r in rewards for e in r.event_ids), conn)
        return {event_id: EventView(event_id, e.position, e.type, e.payload)
                for event_id, e in found.items()}


def stored_content(row: Any) -> dict[str, Any]:
    """A stored manifest's hashed content, exactly as ``Manifest.content`` built it (``row``:
    a result row or a mapping of one)."""
    m = row._mapping if hasattr(row, "_mapping") else row
    return {"specialist": m["specialist"], "cut_from": m["cut_from"], "cut_to": m["cut_to"],
            "reward_ids": m["reward_ids"], "subject_event_ids": m["subject_event_ids"],
            "contract_versions": m["contract_versions"], "split": m["split"],
            "examples_sha256": m["examples_sha256"]}


def reward_row(record: RewardRecord) -> RewardRow:
    """A reward record as a manifest uses it."""
    return RewardRow(
        reward_id=str(record.reward_id), position=record.position or 0,
        subject_id=record.subject_id, event_ids=tuple(record.event_ids),
        contract_name=record.contract_name, contract_version=record.contract_version,
        contract_hash=record.contract_hash, score=record.score,
        components=dict(record.components), split=record.split,
    )
