"""The reward store: append reward records once per (subject, contract version), and query them.

Two rules shape ``record``:

* ``position`` is gapless and in commit order, because the outbox relay tails it to
  ``hcp.rewards`` and the trainer cuts datasets by it: a reader that saw 7 must never
  find a late-committing 6. Positions are therefore allocated under a transaction-scoped
  lock held until commit, as the event store does (a different lock key: reward writers
  need not wait for event writers). On SQLite the engine's BEGIN IMMEDIATE serialises.
* Insert-or-skip: under that lock, rows whose (subject, contract version) already exists
  are dropped *before* positions are handed out. ``ON CONFLICT DO NOTHING`` would not do:
  the skipped row would already own a position and leave a gap. The UNIQUE constraint
  stays as the last line of defence against a writer that bypasses this class.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import ColumnElement, any_, bindparam, func, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.types import String

from evaluators.chain import GENESIS_HASH, reward_hash
from evaluators.model import RewardRecord, errors_from_text, errors_text
from evaluators.tables import reward_records as rr
from events.relay_wake import notify_outbox
from kernel.clock import utc
from kernel.db import is_postgres, reading
from kernel.sql import head, insert_rows, lock_writers

REWARD_LOCK_KEY = 0x484350525744  # "HCPRWD"; the event log uses "HCPLOG"
_ID_CHUNK = 500  # ids per IN (...)


def _eligible(specialist: str, contract: str | None, table: Any = rr) -> ColumnElement[bool]:
    """Rewards the trainer may use: eligible under their contract, scored, no error."""
    c = table.c
    condition = ((c.specialist == specialist) & c.eligible.is_(True)
                 & c.error.is_(None) & c.score.is_not(None))
    if contract is not None:
        condition = condition & (c.contract_name == contract)
    return condition


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

    def record(self, records: Sequence[RewardRecord],
               conn: Connection | None = None) -> list[RewardRecord]:
        """Store the records not stored yet; return those, with their positions.

        Args:
            records: rewards in the order they should take positions.
            conn: a transaction to join (so a checkpoint or job progress commits with them).
        """
        if conn is not None:
            return self._record(conn, records)
        with self.engine.begin() as own:
            return self._record(own, records)

    def _record(self, conn: Connection, records: Sequence[RewardRecord]) -> list[RewardRecord]:
        if not records:
            return []
        # Held until this transaction commits: the next writer reads the head only after
        # our rows are visible, so positions commit in order and without gaps.
        lock_writers(conn, REWARD_LOCK_KEY)
        seen = self._existing(conn, list({r.subject_id for r in records}))
        position, prev_hash = self.chain_head(conn)
        created: list[RewardRecord] = []
        for record in records:
            if record.key in seen:
                continue  # redelivery, a restart, a second worker: already judged
            seen.add(record.key)
            position += 1
            placed = replace(record, position=position, prev_hash=prev_hash, hash=None)
            prev_hash = reward_hash(prev_hash, placed)
            created.append(replace(placed, hash=prev_hash))
        insert_rows(conn, rr, [to_row(r) for r in created], _JSON_COLUMNS)
        if created:
            notify_outbox(conn)  # the relay publishes them on commit, not at its next poll
        return created

    def _existing(self, conn: Connection, subject_ids: list[str]) -> set[tuple[str, str, int]]:
        columns = (rr.c.subject_id, rr.c.contract_name, rr.c.contract_version)
        if is_postgres(conn):
            rows = conn.execute(select(*columns).where(rr.c.subject_id == any_(_IDS)), {"ids": subject_ids})
        else:
            rows = conn.execute(select(*columns).where(rr.c.subject_id.in_(subject_ids)))
        return {(r[0], r[1], int(r[2])) for r in rows}

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
                 conn: Connection | None = None, split: str | None = None) -> list[RewardRecord]:
        """Usable rewards of ``specialist`` with ``after < position <= upto`` (of ``split``
        when given), in order."""
        query = (select(rr).where(_eligible(specialist, contract), rr.c.position > after,
                                  rr.c.position <= upto).order_by(rr.c.position))
        if split is not None:
            query = query.where(rr.c.split == split)
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
        older = rr.alias("older")
        seen_before = (select(older.c.position).where(
            older.c.subject_id == rr.c.subject_id, older.c.position <= after,
            _eligible(specialist, contract, older)).exists())
        query = (select(func.count(func.distinct(rr.c.subject_id)))
                 .where(_eligible(specialist, contract), rr.c.position > after, ~seen_before))
        if version is not None:
            query = query.where(rr.c.contract_version == version)
        if split is not None:
            query = query.where(rr.c.split == split)
        with reading(self.engine, conn) as c:
            return int(c.execute(query).scalar() or 0)

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

    def latest_of(self, contract_name: str, contract_version: int, limit: int) -> list[RewardRecord]:
        """The newest ``limit`` rewards made under one version, in position order."""
        query = (select(rr).where(rr.c.contract_name == contract_name,
                                  rr.c.contract_version == contract_version)
                 .order_by(rr.c.position.desc()).limit(limit))
        with self.engine.connect() as conn:
            found = [from_row(row._mapping) for row in conn.execute(query)]
        return found[::-1]

    def of_subjects(self, contract_name: str, contract_version: int,
                    subject_ids: Iterable[str]) -> list[RewardRecord]:
        """The rewards one version made for these subjects (at most one each)."""
        ids = sorted(set(subject_ids))
        found: list[RewardRecord] = []
        with self.engine.connect() as conn:
            for start in range(0, len(ids), _ID_CHUNK):
                query = select(rr).where(rr.c.contract_name == contract_name,
                                         rr.c.contract_version == contract_version,
                                         rr.c.subject_id.in_(ids[start:start + _ID_CHUNK]))
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


_IDS = bindparam("ids", type_=ARRAY(String))
_JSON_COLUMNS = frozenset({"event_ids", "components", "gates"})


def to_row(record: RewardRecord) -> dict[str, Any]:
    return {
        "position": record.position, "reward_id": record.reward_id, "subject_id": record.subject_id,
        "subject_kind": record.subject_kind, "stream_id": record.stream_id,
        "first_position": record.first_position, "last_position": record.last_position,
        "event_ids": list(record.event_ids), "contract_name": record.contract_name,
        "contract_version": record.contract_version, "contract_hash": record.contract_hash,
        "evaluator_version": record.evaluator_version, "score": record.score,
        "components": dict(record.components), "gates": dict(record.gates), "split": record.split,
        "specialist": record.specialist, "adapter_version": record.adapter_version,
        "eligible": record.eligible, "error": errors_text(record.errors),
        "created_at": utc(record.created_at), "tenant": record.tenant,
        "prev_hash": record.prev_hash, "hash": record.hash,
    }


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
    )
