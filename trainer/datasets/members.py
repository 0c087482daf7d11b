"""The manifests' lineage index: which rewards, sessions and contract versions a manifest holds.

The ``dataset.frozen`` event's projectors write it (``trainer.datasets.projections``);
``ManifestIndex`` answers the lineage questions from it without reading the manifests' JSON columns:
the members of a manifest page by page, the manifests that hold some rewards, some
sessions or a contract version, and a manifest's summary (counts and hashes).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, func, or_, select
from sqlalchemy.engine import Connection, Engine

from kernel.clock import utc
from kernel.db import reading
from kernel.values import JsonValue
from trainer.datasets.leaks import HELD_OUT, TRAIN, Sides
from trainer.datasets.tables import dataset_manifests as dm
from trainer.datasets.tables import manifest_contract_versions as mcv
from trainer.datasets.tables import manifest_members as mm

_CHUNK = 500  # ids per IN (...)


@dataclass(frozen=True)
class Member(JsonValue):
    """One reward a manifest lists: the subject it judged, its session and its split."""

    manifest_id: str
    reward_position: int
    reward_id: str
    subject_id: str
    stream_id: str
    split: str


@dataclass(frozen=True)
class ManifestSummary(JsonValue):
    """A manifest without its id lists: hashes, cut, counts and contract versions."""

    manifest_id: str
    specialist: str
    content_hash: str
    examples_sha256: str
    cut_from: int
    cut_to: int
    reward_count: int  # every listed reward yields one example
    split: dict[str, int]
    contract_versions: list[dict[str, Any]]
    created_at: datetime


@dataclass(frozen=True)
class Reach(JsonValue):
    """How many members of one manifest a source of experience accounts for."""

    manifest_id: str
    members: int


class ManifestIndex:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def summaries(self, manifest_ids: Iterable[str],
                  conn: Connection | None = None) -> dict[str, ManifestSummary]:
        """The summaries of the stored manifests among ``manifest_ids``."""
        ids = sorted(set(manifest_ids))
        columns = (dm.c.manifest_id, dm.c.specialist, dm.c.content_hash, dm.c.examples_sha256,
                   dm.c.cut_from, dm.c.cut_to, dm.c.example_count, dm.c.split,
                   dm.c.contract_versions, dm.c.created_at)
        found: dict[str, ManifestSummary] = {}
        with reading(self.engine, conn) as c:
            for chunk in _chunks(ids):
                for row in c.execute(select(*columns).where(dm.c.manifest_id.in_(chunk))):
                    found[row.manifest_id] = ManifestSummary(
                        manifest_id=row.manifest_id, specialist=row.specialist,
                        content_hash=row.content_hash, examples_sha256=row.examples_sha256,
                        cut_from=row.cut_from, cut_to=row.cut_to, reward_count=row.example_count,
                        split=dict(row.split), contract_versions=list(row.contract_versions),
                        created_at=utc(row.created_at))
        return found

    def headers(self, manifest_ids: Iterable[str],
                conn: Connection | None = None) -> dict[str, tuple[str, str]]:
        """Manifest id -> (specialist, content hash), without reading the JSON columns."""
        ids = sorted(set(manifest_ids))
        found: dict[str, tuple[str, str]] = {}
        with reading(self.engine, conn) as c:
            for chunk in _chunks(ids):
                query = (select(dm.c.manifest_id, dm.c.specialist, dm.c.content_hash)
                         .where(dm.c.manifest_id.in_(chunk)))
                found.update((m, (s, h)) for m, s, h in c.execute(query))
        return found

    def members(self, manifest_id: str, after: int = 0, limit: int = 100,
                split: str | None = None, conn: Connection | None = None) -> list[Member]:
        """Members with reward position > ``after``, in position order (a page)."""
        query = select(mm).where(mm.c.manifest_id == manifest_id, mm.c.reward_position > after)
        if split is not None:
            query = query.where(mm.c.split == split)
        with reading(self.engine, conn) as c:
            rows = c.execute(query.order_by(mm.c.reward_position).limit(limit))
            return [_member(r) for r in rows]

    def sides(self, manifest_ids: Iterable[str],
              conn: Connection | None = None) -> dict[str, Sides]:
        """Each manifest's subjects by side: what its run trained on, what its gate held out."""
        return self._sides(manifest_ids, conn)

    def _sides(self, manifest_ids: Iterable[str], conn: Connection | None,
               where: Any = None) -> dict[str, Sides]:
        ids = sorted(set(manifest_ids))
        found: dict[str, dict[str, set[str]]] = {i: {TRAIN: set(), HELD_OUT: set()} for i in ids}
        with reading(self.engine, conn) as c:
            for chunk in _chunks(ids):
                query = (select(mm.c.manifest_id, mm.c.subject_id, mm.c.split)
                         .where(mm.c.manifest_id.in_(chunk)))
                if where is not None:
                    query = query.where(where)
                for manifest_id, subject_id, split in c.execute(query):
                    found[manifest_id].setdefault(split, set()).add(subject_id)
        return {i: Sides(frozenset(s[TRAIN]), frozenset(s[HELD_OUT])) for i, s in found.items()}

    def leak_sides(self, manifest_ids: Iterable[str],
                   conn: Connection | None = None) -> dict[str, Sides]:
        """``sides``, each held-out side cut to the subjects some manifest trains on: all a
        leak (``leaks.lineage_leaks``) can be made of, and a small part of the members
        (a held-out side lists every earlier held-out reward; train sides are new data)."""
        trained = select(mm.c.subject_id).where(mm.c.split == TRAIN)
        return self._sides(manifest_ids, conn, or_(mm.c.split != HELD_OUT, mm.c.subject_id.in_(trained)))

    def member_positions(self, manifest_id: str) -> Select[tuple[int]]:
        """The reward positions a manifest lists, as a query the reward store can filter
        by (``position IN (…)``, one statement) without naming this package's tables."""
        return select(mm.c.reward_position).where(mm.c.manifest_id == manifest_id)

    def holding_rewards(self, reward_ids: Iterable[uuid.UUID | str],
                        conn: Connection | None = None) -> list[Reach]:
        """The manifests that list any of ``reward_ids``, with how many of them each."""
        ids = sorted({uuid.UUID(str(i)) for i in reward_ids})
        return self._reach(mm.c.reward_id, ids, conn)

    def holding_streams(self, stream_ids: Iterable[str],
                        conn: Connection | None = None) -> list[Reach]:
        """The manifests that list a reward of any of these sessions, with how many."""
        return self._reach(mm.c.stream_id, sorted(set(stream_ids)), conn)

    def holding_contract_version(self, name: str, version: int,
                                 conn: Connection | None = None) -> list[Reach]:
        """The manifests that list rewards judged by ``name@version``, with how many."""
        query = (select(mcv.c.manifest_id, mcv.c.reward_count)
                 .where(mcv.c.contract_name == name, mcv.c.contract_version == version))
        with reading(self.engine, conn) as c:
            return sorted((Reach(r[0], int(r[1])) for r in c.execute(query)),
                          key=lambda r: r.manifest_id)

    def _reach(self, column: Any, values: Sequence[Any], conn: Connection | None) -> list[Reach]:
        counts: Counter[str] = Counter()
        with reading(self.engine, conn) as c:
            for chunk in _chunks(values):
                query = (select(mm.c.manifest_id, func.count()).where(column.in_(chunk))
                         .group_by(mm.c.manifest_id))
                for manifest_id, n in c.execute(query):
                    counts[manifest_id] += int(n)
        return [Reach(m, n) for m, n in sorted(counts.items())]


def _member(row: Any) -> Member:
    return Member(manifest_id=row.manifest_id, reward_position=int(row.reward_position),
                  reward_id=str(row.reward_id), subject_id=row.subject_id,
                  stream_id=row.stream_id, split=row.split)


def _chunks(values: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start:start + _CHUNK]
