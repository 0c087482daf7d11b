"""Reward statistics for people who read them: distributions and means, computed in SQL.

The console shows histograms and means of reward records filtered by specialist, adapter
version, contract version, criterion and time. Every figure is over the newest ``sample``
matching records (by position), so a page costs about the same on a year of rewards as
on a day: filters with an index (contract version, specialist, stream) walk it backwards
and stop after ``sample`` rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, Integer, Select, Uuid, any_, bindparam, cast, func, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Engine

from evaluators.model import RewardRecord
from evaluators.rewards import from_row
from evaluators.tables import reward_records as rr
from kernel.db import is_postgres

BINS = 10  # equal-width bins over [0, 1], as the dry-run report draws them
_ID_CHUNK = 500  # ids per IN (...) on SQLite
_IDS = bindparam("ids", type_=ARRAY(Uuid))


@dataclass(frozen=True)
class RewardFilter:
    """Which reward records a figure is about; None means any."""

    specialist: str | None = None
    adapter_version: str | None = None
    contract_name: str | None = None
    contract_version: int | None = None
    criterion: str | None = None  # the distribution of this component instead of the score
    since: datetime | None = None
    until: datetime | None = None


@dataclass(frozen=True)
class Distribution:
    """The newest ``sample`` scored records matching a filter, summarised."""

    count: int
    mean: float | None
    histogram: tuple[int, ...]
    criteria_means: dict[str, float | None] = field(default_factory=dict)
    sample: int = 0  # the cap the count was taken under (count == sample: there are more)

    @property
    def capped(self) -> bool:
        return self.sample > 0 and self.count >= self.sample


@dataclass(frozen=True)
class SplitHistograms:
    """Scores of a set of rewards (a dataset manifest's), per split."""

    histograms: dict[str, tuple[int, ...]]
    means: dict[str, float | None]
    missing: int  # ids not found (or without a score)


class RewardStats:
    """Read-only aggregates over reward records (the reward store writes them)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def distribution(self, where: RewardFilter, criteria: Sequence[str] = (),
                     sample: int = 10_000) -> Distribution:
        """Histogram and mean of the score (or of ``where.criterion``), and the mean of
        each of ``criteria``, over the newest ``sample`` matching scored records."""
        rows = _sample(where, sample).subquery("sample")
        postgres = is_postgres(self.engine)
        bucket = (func.floor(rows.c.value * BINS) if postgres
                  else cast(rows.c.value * BINS, Integer))  # truncation = floor for values >= 0
        by_bucket = select(bucket.label("b"), func.count(), func.sum(rows.c.value)).group_by(bucket)
        means = select(*[func.avg(rows.c.components[name].as_float()) for name in criteria])
        with self.engine.connect() as conn:
            buckets = [(int(b or 0), int(n), float(s or 0.0)) for b, n, s in conn.execute(by_bucket)]
            criteria_row = conn.execute(means).one() if criteria else ()
        count = sum(n for _, n, _ in buckets)
        total = sum(s for _, _, s in buckets)
        return Distribution(
            count=count, mean=total / count if count else None,
            histogram=_binned((b, n) for b, n, _ in buckets),
            criteria_means={name: _float(v) for name, v in zip(criteria, criteria_row, strict=True)},
            sample=sample)

    def latest(self, where: RewardFilter, before: int | None = None,
               limit: int = 50) -> list[RewardRecord]:
        """Matching records (scored or not) newest first, with position < ``before``."""
        query = select(rr).where(*_conditions(where))
        if before is not None:
            query = query.where(rr.c.position < before)
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(rr.c.position.desc()).limit(limit))
            return [from_row(row._mapping) for row in rows]

    def of_rewards(self, reward_ids: Iterable[uuid.UUID | str]) -> SplitHistograms:
        """Score histograms per split of the given rewards (a manifest's reward ids)."""
        ids = sorted({uuid.UUID(str(i)) for i in reward_ids})
        scores: dict[str, list[float]] = {}
        columns = select(rr.c.split, rr.c.score).where(rr.c.score.is_not(None))
        with self.engine.connect() as conn:
            if is_postgres(conn):  # one array parameter: one round trip for any number of ids
                rows = list(conn.execute(columns.where(rr.c.reward_id == any_(_IDS)), {"ids": ids}))
            else:
                rows = [row for start in range(0, len(ids), _ID_CHUNK) for row in conn.execute(
                    columns.where(rr.c.reward_id.in_(ids[start:start + _ID_CHUNK])))]
        for split, score in rows:
            scores.setdefault(split, []).append(float(score))
        found = sum(len(v) for v in scores.values())
        return SplitHistograms(
            histograms={s: histogram(v) for s, v in sorted(scores.items())},
            means={s: sum(v) / len(v) for s, v in sorted(scores.items())},
            missing=len(ids) - found)


def histogram(values: Iterable[float], bins: int = BINS) -> tuple[int, ...]:
    """Counts per equal-width bin over [0, 1]; 1.0 falls in the last bin."""
    return _binned((int(v * bins), 1) for v in values)


def _binned(counts: Iterable[tuple[int, int]], bins: int = BINS) -> tuple[int, ...]:
    out = [0] * bins
    for index, n in counts:
        out[min(bins - 1, max(0, index))] += n
    return tuple(out)


def _value(where: RewardFilter) -> ColumnElement[Any]:
    if where.criterion is None:
        return rr.c.score
    return rr.c.components[where.criterion].as_float()


def _sample(where: RewardFilter, sample: int) -> Select[Any]:
    value = _value(where)
    return (select(value.label("value"), rr.c.components)
            .where(*_conditions(where), rr.c.score.is_not(None), value.is_not(None))
            .order_by(rr.c.position.desc()).limit(sample))


def _conditions(where: RewardFilter) -> list[ColumnElement[bool]]:
    equal = {rr.c.specialist: where.specialist, rr.c.adapter_version: where.adapter_version,
             rr.c.contract_name: where.contract_name, rr.c.contract_version: where.contract_version}
    found = [column == value for column, value in equal.items() if value is not None]
    # Stored as UTC (SQLite keeps no offset), so compare in UTC.
    if where.since is not None:
        found.append(rr.c.created_at >= _utc(where.since))
    if where.until is not None:
        found.append(rr.c.created_at < _utc(where.until))
    return found


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
