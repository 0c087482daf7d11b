"""Training schedules: intervals and cron lines."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from contract.schedule import parse_schedule

T = datetime(2024, 6, 1, 12, 30, tzinfo=UTC)  # a Saturday


def test_interval() -> None:
    assert parse_schedule("every 6h").next_after(T) == T + timedelta(hours=6)
    assert parse_schedule("every 15m").interval == timedelta(minutes=15)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("0 3 * * *", datetime(2024, 6, 2, 3, 0, tzinfo=UTC)),
        ("*/20 * * * *", datetime(2024, 6, 1, 12, 40, tzinfo=UTC)),
        ("0 9 * * 1-5", datetime(2024, 6, 3, 9, 0, tzinfo=UTC)),  # next weekday is Monday
        ("0 0 1 1 *", datetime(2025, 1, 1, 0, 0, tzinfo=UTC)),
        ("30 12 * * 6,0", datetime(2024, 6, 2, 12, 30, tzinfo=UTC)),  # strictly after
    ],
)
def test_cron_next(line: str, expected: datetime) -> None:
    assert parse_schedule(line).next_after(T) == expected


@pytest.mark.parametrize("line", ["every 0h", "every 5s", "0 24 * * *", "* * *", "a * * * *", "*/0 * * * *"])
def test_invalid(line: str) -> None:
    with pytest.raises(ValueError):
        parse_schedule(line)


def test_a_date_that_never_comes() -> None:
    assert parse_schedule("0 0 31 2 *").next_after(T) is None
