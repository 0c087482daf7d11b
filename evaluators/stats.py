"""Reward statistics for people who read them: distributions and means, computed in SQL.

The console shows histograms and means of reward records filtered by specialist, adapter
version, contract version, criterion and time. Every figure is over the newest ``sample``
matching records (by position), so a page costs about the same on a year of rewards as
on a day: filters with an index (contract version, specialist, stream) walk it backwards
and stop after ``sample`` rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import BigInteger, ColumnElement, Float, Integer, Select, any_, bindparam, cast, func, select
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.engine import Engine

from evaluators.model import RewardRecord
from evaluators.rewards import from_row
from evaluators.tables import reward_records as rr
from kernel.db import is_postgres

BINS = 10  # equal-width bins over [0, 1], as the dry-run report draws them
_ID_CHUNK = 500  # positions per IN (...) on SQLite
_POSITIONS = bindparam("positions", type_=ARRAY(BigInteger))


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
    """Scores of a set of rewards (a dataset manifest's members), per split."""

    histograms: dict[str, tuple[int, ...]]
    means: dict[str, float | None]
    scored: int  # how many of the rewards were found with a score


class RewardStats:
    """Read-only aggregates over reward records (the reward store writes them)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def distribution(self, where: RewardFilter, criteria: Sequence[str] = (),
                     sample: int = 10_000) -> Distribution:
        """Histogram and mean of the score (or of ``where.criterion``), and the mean of
        each of ``criteria``, over the newest ``sample`` matching scored records."""
        postgres = is_postgres(self.engine)
        rows = _sample(where, sample, postgres).subquery("sample")
        bucket = (func.floor(rows.c.value * BINS) if postgres
                  else cast(rows.c.value * BINS, Integer))  # truncation = floor for values >= 0
        components = [_component(rows.c.components, name, postgres) for name in criteria]
        # One pass over the sample: per bucket, the count and sum of the value and, per
        # criterion, the count and sum of its non-null scores.
        per_bucket = select(bucket, func.count(), func.sum(rows.c.value),
                            *[f(c) for c in components for f in (func.count, func.sum)]).group_by(bucket)
        with self.engine.connect() as conn:
            buckets = [tuple(r) for r in conn.execute(per_bucket)]
        count = sum(int(r[1]) for r in buckets)
        total = sum(float(r[2] or 0.0) for r in buckets)
        means = {}
        for i, name in enumerate(criteria):
            n = sum(int(r[3 + 2 * i]) for r in buckets)
            means[name] = sum(float(r[4 + 2 * i] or 0.0) for r in buckets) / n if n else None
        return Distribution(
            count=count, mean=total / count if count else None,
            histogram=_binned((int(r[0] or 0), int(r[1])) for r in buckets),
            criteria_means=means, sample=sample)

    def latest(self, where: RewardFilter, before: int | None = None,
               limit: int = 50) -> list[RewardRecord]:
        """Matching records (scored or not) newest first, with position < ``before``."""
        query = select(rr).where(*_conditions(where))
        if before is not None:
            query = query.where(rr.c.position < before)
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(rr.c.position.desc()).limit(limit))
            return [from_row(row._mapping) for row in rows]

    def of_positions(self, positions: Sequence[int] | Select[Any]) -> SplitHistograms:
        """Score histograms and means per split of the rewards at ``positions``: a list,
        or a query of positions (a dataset manifest's members), aggregated in one statement."""
        postgres = is_postgres(self.engine)
        bucket = func.floor(rr.c.score * BINS) if postgres else cast(rr.c.score * BINS, Integer)
        query = (select(rr.c.split, bucket, func.count(), func.sum(rr.c.score))
                 .where(rr.c.score.is_not(None)).group_by(rr.c.split, bucket))
        with self.engine.connect() as conn:
            if isinstance(positions, Select):
                rows = list(conn.execute(query.where(_in_query(rr.c.position, positions, postgres))))
            elif postgres:  # one array parameter: one round trip for any number of positions
                rows = list(conn.execute(query.where(rr.c.position == any_(_POSITIONS)),
                                         {"positions": list(positions)}))
            else:
                rows = [r for start in range(0, len(positions), _ID_CHUNK) for r in conn.execute(
                    query.where(rr.c.position.in_(list(positions[start:start + _ID_CHUNK]))))]
        counts: dict[str, list[tuple[int, int]]] = {}
        sums: dict[str, float] = {}
        for split, index, n, total in rows:
            counts.setdefault(split, []).append((int(index or 0), int(n)))
            sums[split] = sums.get(split, 0.0) + float(total or 0.0)
        found = {split: sum(n for _, n in pairs) for split, pairs in counts.items()}
        return SplitHistograms(
            histograms={split: _binned(pairs) for split, pairs in sorted(counts.items())},
            means={split: sums[split] / found[split] for split in sorted(found)},
            scored=sum(found.values()))


def _in_query(column: ColumnElement[Any], values: Select[Any], postgres: bool) -> ColumnElement[bool]:
    """``column IN (values)``; on PostgreSQL as ``= ANY((SELECT array_agg …))``: the list is
    built once and each value is one index probe (``IN`` made the planner merge-join the
    whole table up to the largest position)."""
    if not postgres:
        return column.in_(values.scalar_subquery())
    listed = values.subquery()
    gathered = select(func.array_agg(list(listed.c)[0])).scalar_subquery()
    return column == any_(cast(gathered, ARRAY(BigInteger)))  # an array, not ANY (subquery)


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


def _sample(where: RewardFilter, sample: int, postgres: bool) -> Select[Any]:
    value = _value(where)
    # On PostgreSQL the JSON text is parsed once per row (as jsonb), not once per criterion.
    components = cast(rr.c.components, JSONB) if postgres else rr.c.components
    return (select(value.label("value"), components.label("components"))
            .where(*_conditions(where), rr.c.score.is_not(None), value.is_not(None))
            .order_by(rr.c.position.desc()).limit(sample))


def _component(components: Any, name: str, postgres: bool) -> ColumnElement[Any]:
    """One criterion's score out of the sample's components column."""
    if postgres:
        return cast(components[name].astext, Float)
    return cast(components[name], Float)


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
