"""UTC time, the only time the stores keep."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


def utc(moment: datetime) -> datetime:
    """Normalise to aware UTC; naive values (SQLite hands them back) are taken as UTC."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
