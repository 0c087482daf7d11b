"""The reward store: append reward records once per (subject, contract version), and query them.

The write path (positions under a lock, insert-or-skip, the reward chain) is
evaluators/reward_writes.py; here are the store and the reads.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.engine import Connection, Engine

from evaluators.backlog_rows import add_waiting
from evaluators.chain import GENESIS_HASH
from evaluators.model import RewardRecord, errors_from_text
from evaluators.reward_writes import append_rewards
from evaluators.tables import reward_records as rr
from kernel.clock import utc
from kernel.db import reading
from kernel.sql import head

if TYPE_CHECKING:
    from evaluators.scoring import Awaiting

_ID_CHUNK = 500  # ids per IN (...)


def _eligible(specialist: str, contract: str | None, table: Any = rr) -> ColumnElement[bool]:
    """Rewards the trainer may use: eligible under their contract, scored, no error."""
    c = table.c
    condition = ((c.specialist == specialist) & c.eligible.is_(True)
                 & c.error.is_(None) & c.score.is_not(None))
    if contract is not None:
        condition = condition & (c.contract_name == contract)
    return condition


def _seen_before(specialist: str, contract: str | None, after: int) -> ColumnElement[bool]:
    """The reward's subject had a usable reward at or before position ``after``."""
    older = rr.alias("older")
    return (select(older.c.position).where(
        older.c.subject_id == rr.c.subject_id, older.c.position <= after,
        _eligible(specialist, contract, older)).exists())


@dataclass(frozen=True)
class RewardQuery:
    contract_name: str | None = None
    contract_version: int | None = None
    subject_id: str | None = None
    stream_id: str | None = None
    specialist: str | None = None
    eligible: bool | None = None
    tenant: str | None = None  # only this tenant's rewards; None: every tenant's
    after: int = 0
    limit: int = 100


class RewardStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def record(self, records: Sequence[RewardRecord], conn: Connection | None = None,
               awaiting: Sequence[Awaiting] = ()) -> list[RewardRecord]:
        """Store the records not stored yet; return those, with their positions.

        Args:
            records: rewards in the order they should take positions.
            conn: a transaction to join (so a checkpoint or job progress commits with them).
            awaiting: subjects whose judges have not answered yet, added to the judge
                backlog in the same transaction (evaluators/backlog_rows.py).
        """
        if conn is not None:
            add_waiting(conn, awaiting)
            return append_rewards(conn, records)
        with self.engine.begin() as own:
            add_waiting(own, awaiting)
            return append_rewards(own, records)

    def head(self, tenant: str | None = None) -> int:
        """The last committed reward position (0 when there is none), or the tenant's last."""
        with self.engine.connect() as conn:
            if tenant is None:
                return head(conn, rr.c.position)
            return int(conn.execute(select(func.max(rr.c.position))
                                    .where(rr.c.tenant == tenant)).scalar() or 0)

    def chain_head(self, conn: Connection | None = None) -> tuple[int, str]:
        """(position, hash) of the last reward: where the reward chain continues."""
        query = select(rr.c.position, rr.c.hash).order_by(rr.c.position.desc()).limit(1)
        with reading(self.engine, conn) as c:
            row = c.execute(query).first()
        return (int(row[0]), str(row[1])) if row else (0, GENESIS_HASH)

    def at_positions(self, positions: Iterable[int]) -> dict[int, RewardRecord]:
        """The stored rewards at ``positions`` (absent ones left out), by position."""
        wanted = sorted(set(positions))
        found: dict[int, RewardRecord] = {}
        with self.engine.connect() as conn:
            for start in range(0, len(wanted), _ID_CHUNK):
                query = select(rr).where(rr.c.position.in_(wanted[start:start + _ID_CHUNK]))
                found.update((row.position, from_row(row._mapping)) for row in conn.execute(query))
        return found

    def get(self, reward_id: uuid.UUID, tenant: str | None = None) -> RewardRecord | None:
        """The reward; None if there is none or it belongs to another tenant."""
        query = select(rr).where(rr.c.reward_id == reward_id)
        if tenant is not None:
            query = query.where(rr.c.tenant == tenant)
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        return from_row(row._mapping) if row else None

    def find(self, query: RewardQuery) -> list[RewardRecord]:
        """Rewards matching every given filter, with position > ``after``, in position order."""
        statement = select(rr).where(rr.c.position > query.after)
        filters = {rr.c.contract_name: query.contract_name, rr.c.contract_version: query.contract_version,
                   rr.c.subject_id: query.subject_id, rr.c.stream_id: query.stream_id,
                   rr.c.specialist: query.specialist, rr.c.eligible: query.eligible,
                   rr.c.tenant: query.tenant}
        for column, value in filters.items():
            if value is not None:
                statement = statement.where(column == value)
        statement = statement.order_by(rr.c.position).limit(query.limit)
        with self.engine.connect() as conn:
            return [from_row(row._mapping) for row in conn.execute(statement)]

    # --- what the trainer reads: eligible rewards of a specialist --------------------

    # ``conn``: the caller's open transaction (a trigger firing reads under its lock).

    def eligible(self, specialist: str, contract: str | None, after: int, upto: int,
                 conn: Connection | None = None, split: str | None = None,
                 new_subjects: bool = False) -> list[RewardRecord]:
        """Usable rewards of ``specialist`` with ``after < position <= upto`` (of ``split``
        when given), in order. ``new_subjects``: only of subjects that had no usable reward
        at or before ``after`` (what ``count_new_subjects`` counts: a re-scoring of an old
        subject by a newly published version is not new data)."""
        query = (select(rr).where(_eligible(specialist, contract), rr.c.position > after,
                                  rr.c.position <= upto).order_by(rr.c.position))
        if split is not None:
            query = query.where(rr.c.split == split)
        if new_subjects:
            query = query.where(~_seen_before(specialist, contract, after))
        with reading(self.engine, conn) as c:
            return [from_row(row._mapping) for row in c.execute(query)]

    def eligible_head(self, specialist: str, contract: str | None,
                      conn: Connection | None = None) -> int:
        """The last position of a usable reward of ``specialist`` (0: none yet)."""
        query = select(func.coalesce(func.max(rr.c.position), 0)).where(_eligible(specialist, contract))
        with reading(self.engine, conn) as c:
            return int(c.execute(query).scalar() or 0)

    def count_eligible(self, specialist: str, contract: str | None, after: int,
                       split: str | None = None, conn: Connection | None = None) -> int:
        """How many usable rewards of ``specialist`` lie after position ``after``."""
        query = select(func.count()).select_from(rr).where(_eligible(specialist, contract),
                                                           rr.c.position > after)
        if split is not None:
            query = query.where(rr.c.split == split)
        with reading(self.engine, conn) as c:
            return int(c.execute(query).scalar() or 0)

    def count_new_subjects(self, specialist: str, contract: str | None, version: int | None,
                           after: int, split: str | None = "train",
                           conn: Connection | None = None) -> int:
        """Subjects of ``specialist`` with a usable reward after position ``after`` (under
        ``contract@version`` when given) that had none at or before it.

        Subjects, not rewards: every active version scores each subject, and a re-scoring
        of an old subject by a newly published version is not new data.
        """
        query = (select(func.count(func.distinct(rr.c.subject_id)))
                 .where(_eligible(specialist, contract), rr.c.position > after,
                        ~_seen_before(specialist, contract, after)))
        if version is not None:
            query = query.where(rr.c.contract_version == version)
        if split is not None:
            query = query.where(rr.c.split == split)
        with reading(self.engine, conn) as c:
            return int(c.execute(query).scalar() or 0)

    def first_sides(self, subject_ids: Iterable[str],
                    conn: Connection | None = None) -> dict[str, str]:
        """Each subject's side as its first reward (any contract) recorded it: the side it
        keeps (``contract.split``; rewards made under split rule 1 may disagree)."""
        ids = sorted(set(subject_ids))
        found: dict[str, str] = {}
        with reading(self.engine, conn) as c:
            for start in range(0, len(ids), _ID_CHUNK):
                first = (select(func.min(rr.c.position))
                         .where(rr.c.subject_id.in_(ids[start:start + _ID_CHUNK]))
                         .group_by(rr.c.subject_id))
                rows = c.execute(select(rr.c.subject_id, rr.c.split).where(rr.c.position.in_(first)))
                found.update((str(subject), str(split)) for subject, split in rows)
        return found

    def contract_names(self, specialist: str, conn: Connection | None = None) -> list[str]:
        """The contracts that made usable rewards of ``specialist``."""
        query = select(rr.c.contract_name).where(_eligible(specialist, None)).distinct()
        with reading(self.engine, conn) as c:
            return sorted(c.execute(query).scalars())

    def served_mean(self, adapter_version: str, window: int, conn: Connection | None = None,
                    contract: str | None = None,
                    version: int | None = None) -> tuple[float | None, int]:
        """Mean score of the last ``window`` scored rewards of subjects the adapter served
        (only those made by ``contract@version`` when given: one reward per subject)."""
        scope = [rr.c.adapter_version == adapter_version, rr.c.score.is_not(None)]
        if contract is not None:
            scope.append(rr.c.contract_name == contract)
        if version is not None:
            scope.append(rr.c.contract_version == version)
        latest = (select(rr.c.score).where(*scope)
                  .order_by(rr.c.position.desc()).limit(window).subquery())
        with reading(self.engine, conn) as c:
            mean, count = c.execute(select(func.avg(latest.c.score), func.count())).one()
        return (float(mean) if mean is not None else None), int(count)

    def by_ids(self, reward_ids: Iterable[uuid.UUID | str],
               conn: Connection | None = None) -> list[RewardRecord]:
        """The stored rewards among ``reward_ids``, in position order."""
        ids = sorted({uuid.UUID(str(i)) for i in reward_ids})
        found: list[RewardRecord] = []
        with reading(self.engine, conn) as c:
            for start in range(0, len(ids), _ID_CHUNK):
                query = select(rr).where(rr.c.reward_id.in_(ids[start:start + _ID_CHUNK]))
                found += [from_row(row._mapping) for row in c.execute(query)]
        return sorted(found, key=lambda r: r.position or 0)

    def latest_of(self, contract_name: str, contract_version: int, limit: int,
                  tenant: str | None = None) -> list[RewardRecord]:
        """The newest ``limit`` rewards made under one version, in position order
        (``tenant``: that tenant's only; None: every tenant's)."""
        query = (select(rr).where(rr.c.contract_name == contract_name,
                                  rr.c.contract_version == contract_version)
                 .order_by(rr.c.position.desc()).limit(limit))
        if tenant is not None:
            query = query.where(rr.c.tenant == tenant)
        with self.engine.connect() as conn:
            found = [from_row(row._mapping) for row in conn.execute(query)]
        return found[::-1]

    def of_subjects(self, contract_name: str, contract_version: int,
                    subject_ids: Iterable[str], tenant: str | None = None) -> list[RewardRecord]:
        """The rewards one version made for these subjects (at most one each; ``tenant``:
        that tenant's only)."""
        ids = sorted(set(subject_ids))
        found: list[RewardRecord] = []
        with self.engine.connect() as conn:
            for start in range(0, len(ids), _ID_CHUNK):
                query = select(rr).where(rr.c.contract_name == contract_name,
                                         rr.c.contract_version == contract_version,
                                         rr.c.subject_id.in_(ids[start:start + _ID_CHUNK]))
                if tenant is not None:
                    query = query.where(rr.c.tenant == tenant)
                found += [from_row(row._mapping) for row in conn.execute(query)]
        return sorted(found, key=lambda r: r.position or 0)
    # --- what lineage reads: the rewards an event or some sessions led to --------------

    def containing_event(self, stream_id: str, position: int, event_id: uuid.UUID | str,
                         conn: Connection | None = None) -> list[RewardRecord]:
        """Every reward whose subject holds the event (a subject is a run of one stream,
        so its window ``first_position..last_position`` is checked first, on the index)."""
        query = (select(rr).where(rr.c.stream_id == stream_id, rr.c.first_position <= position,
                                  rr.c.last_position >= position).order_by(rr.c.position))
        with reading(self.engine, conn) as c:
            found = [from_row(row._mapping) for row in c.execute(query)]
        return [r for r in found if str(event_id) in r.event_ids]

    def of_streams(self, stream_ids: Sequence[str], after: int = 0, limit: int = 100,
                   conn: Connection | None = None) -> tuple[int, list[RewardRecord]]:
        """How many rewards these sessions have, and a page of them in position order."""
        total, page = 0, []
        with reading(self.engine, conn) as c:
            for start in range(0, len(stream_ids), _ID_CHUNK):
                chunk = list(stream_ids[start:start + _ID_CHUNK])
                total += int(c.execute(select(func.count()).select_from(rr)
                                          .where(rr.c.stream_id.in_(chunk))).scalar() or 0)
                query = (select(rr).where(rr.c.stream_id.in_(chunk), rr.c.position > after)
                         .order_by(rr.c.position).limit(limit))
                page += [from_row(row._mapping) for row in c.execute(query)]
        return total, sorted(page, key=lambda r: r.position or 0)[:limit]

    def count(self, contract_name: str, contract_version: int) -> int:
        statement = select(func.count()).select_from(rr).where(
            rr.c.contract_name == contract_name, rr.c.contract_version == contract_version)
        with self.engine.connect() as conn:
            return int(conn.execute(statement).scalar() or 0)


def from_row(row: Any) -> RewardRecord:
    return RewardRecord(
        reward_id=row["reward_id"], subject_id=row["subject_id"], subject_kind=row["subject_kind"],
        stream_id=row["stream_id"], first_position=row["first_position"],
        last_position=row["last_position"], event_ids=tuple(row["event_ids"]),
        contract_name=row["contract_name"], contract_version=row["contract_version"],
        contract_hash=row["contract_hash"], evaluator_version=row["evaluator_version"],
        score=row["score"], components=dict(row["components"] or {}), gates=dict(row["gates"] or {}),
        split=row["split"], specialist=row["specialist"], adapter_version=row["adapter_version"],
        eligible=bool(row["eligible"]), errors=errors_from_text(row["error"]),
        created_at=utc(row["created_at"]), position=row["position"], tenant=row["tenant"],
        prev_hash=row["prev_hash"], hash=row["hash"],
        judgements=tuple(row.get("judgements") or ()),
    )
