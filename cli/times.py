"""The one way commands read a time (``--at T``) and a duration (``--every``, ``--expires-in``).

A time is ISO 8601 (``2026-12-01``, ``2026-12-01T09:30``, ``2026-12-01T09:30:00+01:00``;
without a zone it is UTC, the zone the log keeps), ``now``, ``today`` or ``yesterday``
(midnight UTC, as journalctl reads them), or a duration back from now: ``30m``, ``2h``,
``7d``, ``1w``, also written ``2h ago`` or ``-2h``. A duration is a number and a unit:
``s``, ``m``, ``h``, ``d`` or ``w``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import typer

from kernel.clock import utc, utcnow

UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw]?)")
_AGO = re.compile(r"-\s*(.+)|(.+?)\s+ago")
TIME_FORMS = "ISO 8601 (naive = UTC), now, today, yesterday, or back from now: 30m, 2h, 7d"


def parse_duration(text: str, bare_unit: str | None = None) -> timedelta:
    """``90d``, ``12h``, ``30m``, ``45s``, ``2w``; a bare number only with ``bare_unit``."""
    match = _DURATION.fullmatch(text.strip().lower())
    unit = (match[2] or bare_unit) if match else None
    if match is None or unit is None or float(match[1]) <= 0:
        raise ValueError(f"{text!r} is not a duration: give a number and a unit, e.g. 30m, 12h, 90d")
    try:
        return timedelta(**{UNITS[unit]: float(match[1])})
    except OverflowError:
        raise ValueError(f"{text!r} is longer than any time the log can hold") from None


def parse_time(text: str, now: datetime | None = None) -> datetime:
    """An aware UTC datetime for any of the forms in the module's doc."""
    now = utc(now) if now is not None else utcnow()
    word = text.strip().lower()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    named = {"now": now, "today": midnight, "yesterday": midnight - timedelta(days=1)}
    if word in named:
        return named[word]
    back = _AGO.fullmatch(word)
    if back or _DURATION.fullmatch(word):
        try:
            return now - parse_duration((back[1] or back[2]) if back else word)
        except (ValueError, OverflowError):
            pass  # perhaps a basic ISO form (20261201) after all
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a time: give {TIME_FORMS}") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def time_param(text: str | datetime) -> datetime:
    """``parse_time`` as a typer parser: a bad time is a usage error (exit 2)."""
    if isinstance(text, datetime):
        return text
    try:
        return parse_time(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def duration_param(bare_unit: str | None = None) -> Any:
    """``parse_duration`` as a typer parser (seconds when ``bare_unit`` is ``s``)."""

    def parse(text: str | timedelta) -> timedelta:
        if isinstance(text, timedelta):
            return text
        try:
            return parse_duration(text, bare_unit)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None

    return parse


def at_option(help_text: str = "When (default now)") -> Any:
    """The ``--at T`` option every command that looks at a moment takes."""
    return typer.Option(None, "--at", parser=time_param, metavar="TIME",
                        help=f"{help_text}: {TIME_FORMS}")
