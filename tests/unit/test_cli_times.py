"""The one time and duration grammar of the command line (cli/times.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from cli.times import parse_duration, parse_time

NOW = datetime(2026, 12, 2, 15, 30, 45, tzinfo=UTC)


@pytest.mark.parametrize(("text", "expected"), [
    ("now", NOW),
    ("today", datetime(2026, 12, 2, tzinfo=UTC)),
    ("yesterday", datetime(2026, 12, 1, tzinfo=UTC)),
    ("2h", NOW - timedelta(hours=2)),
    ("30m", NOW - timedelta(minutes=30)),
    ("7d", NOW - timedelta(days=7)),
    ("1w", NOW - timedelta(weeks=1)),
    ("90s", NOW - timedelta(seconds=90)),
    ("1.5h", NOW - timedelta(minutes=90)),
    ("2h ago", NOW - timedelta(hours=2)),
    ("-2h", NOW - timedelta(hours=2)),
    (" Yesterday ", datetime(2026, 12, 1, tzinfo=UTC)),
])
def test_named_and_relative_times_count_back_from_now(text: str, expected: datetime) -> None:
    assert parse_time(text, NOW) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-11-29", datetime(2026, 11, 29, tzinfo=UTC)),
    ("2026-11-29T12:00", datetime(2026, 11, 29, 12, tzinfo=UTC)),
    ("2026-11-29T12:00:00Z", datetime(2026, 11, 29, 12, tzinfo=UTC)),
    ("2026-11-29T13:00:00+01:00", datetime(2026, 11, 29, 12, tzinfo=UTC)),
    ("2026-11-29 12:00:00.5", datetime(2026, 11, 29, 12, 0, 0, 500_000, tzinfo=UTC)),
    ("20261129", datetime(2026, 11, 29, tzinfo=UTC)),
])
def test_iso_8601_is_read_as_utc_when_it_names_no_zone(text: str, expected: datetime) -> None:
    found = parse_time(text, NOW)
    assert found == expected and found.tzinfo is not None and found.utcoffset() == timedelta(0)


def test_a_naive_now_is_taken_as_utc() -> None:
    assert parse_time("1h", NOW.replace(tzinfo=None)) == NOW - timedelta(hours=1)
    assert parse_time("now", NOW.astimezone(timezone(timedelta(hours=5)))) == NOW


@pytest.mark.parametrize("text", ["", "soon", "2x", "h", "0h", "2026-13-01", "tomorrow-ish",
                                  "99999999999999w"])
def test_anything_else_is_refused_naming_the_forms(text: str) -> None:
    with pytest.raises(ValueError, match="is not a time: give ISO 8601") as refused:
        parse_time(text, NOW)
    assert "2h" in str(refused.value) and "yesterday" in str(refused.value)


@pytest.mark.parametrize(("text", "bare", "expected"), [
    ("90d", None, timedelta(days=90)),
    ("12h", None, timedelta(hours=12)),
    ("30m", None, timedelta(minutes=30)),
    ("0.1s", None, timedelta(milliseconds=100)),
    ("60", "s", timedelta(seconds=60)),
    ("2W", None, timedelta(weeks=2)),
])
def test_durations_need_a_unit_unless_the_option_names_one(text: str, bare: str | None,
                                                            expected: timedelta) -> None:
    assert parse_duration(text, bare) == expected


@pytest.mark.parametrize("text", ["60", "0m", "-5m", "5y", "m", "1e400d"])
def test_bad_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="duration|longer than"):
        parse_duration(text)
