"""Training schedules: `every <n><m|h|d>` intervals or five-field cron lines, in UTC.

Only parsing and "when is it next due" live here; deciding to fire (and remembering when
it last fired) belongs to the trigger policies in `trainer/`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_INTERVAL = re.compile(r"^every\s+(\d+)\s*(m|h|d)$")
_UNITS = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1)}
# minute, hour, day of month, month, day of week (0 = Sunday; 7 accepted as Sunday too)
_FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day", 1, 31), ("month", 1, 12), ("weekday", 0, 7))
_SEARCH_LIMIT = timedelta(days=366 * 4)  # Feb 29 on a given weekday can be years away


@dataclass(frozen=True)
class Schedule:
    text: str
    interval: timedelta | None = None
    cron: tuple[frozenset[int], ...] | None = None

    def next_after(self, moment: datetime) -> datetime | None:
        """The first due time strictly after `moment` (None: a cron that never matches)."""
        moment = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
        if self.interval is not None:
            return moment + self.interval
        return _next_cron(self.cron or (), moment)


_DURATION = re.compile(r"^(\d+)\s*(m|h|d)$")


def parse_duration(text: str) -> timedelta:
    """``<n>m|h|d`` (e.g. ``6h``) as a timedelta; raises ValueError naming what is wrong."""
    match = _DURATION.match(text.strip())
    if not match or int(match[1]) < 1:
        raise ValueError(f"duration {text!r}: expected '<n>m', '<n>h' or '<n>d' with n >= 1")
    return int(match[1]) * _UNITS[match[2]]


def parse_schedule(text: str) -> Schedule:
    """Parse a schedule; raises ValueError naming what is wrong."""
    stripped = text.strip()
    match = _INTERVAL.match(stripped)
    if match:
        count = int(match[1])
        if count < 1:
            raise ValueError("an interval must be at least 1")
        return Schedule(stripped, interval=count * _UNITS[match[2]])
    parts = stripped.split()
    if len(parts) != 5:
        raise ValueError(f"schedule {text!r}: expected 'every <n>m|h|d' or five cron fields")
    fields = tuple(_cron_field(part, *spec) for part, spec in zip(parts, _FIELDS, strict=True))
    weekdays = frozenset(0 if day == 7 else day for day in fields[4])
    return Schedule(stripped, cron=(*fields[:4], weekdays))


def _cron_field(part: str, name: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for item in part.split(","):
        span, _, step_text = item.partition("/")
        step = _number(step_text, name) if step_text else 1
        if step < 1:
            raise ValueError(f"cron {name}: step must be at least 1")
        if span == "*":
            start, end = low, high
        elif "-" in span:
            first, _, last = span.partition("-")
            start, end = _number(first, name), _number(last, name)
        else:
            start = _number(span, name)
            end = high if step_text else start
        if not low <= start <= end <= high:
            raise ValueError(f"cron {name}: {item!r} is outside {low}-{high}")
        values.update(range(start, end + 1, step))
    return frozenset(values)


def _number(text: str, name: str) -> int:
    if not text.isdigit():
        raise ValueError(f"cron {name}: {text!r} is not a number")
    return int(text)


def _next_cron(fields: tuple[frozenset[int], ...], moment: datetime) -> datetime | None:
    minutes, hours, days, months, weekdays = fields
    candidate = moment.replace(second=0, microsecond=0) + timedelta(minutes=1)
    limit = moment + _SEARCH_LIMIT
    while candidate <= limit:
        weekday = (candidate.weekday() + 1) % 7  # Python: Monday = 0; cron: Sunday = 0
        if candidate.month not in months or candidate.day not in days or weekday not in weekdays:
            candidate = candidate.replace(hour=0, minute=0) + timedelta(days=1)
        elif candidate.hour not in hours:
            candidate = candidate.replace(minute=0) + timedelta(hours=1)
        elif candidate.minute not in minutes:
            candidate += timedelta(minutes=1)
        else:
            return candidate
    return None
