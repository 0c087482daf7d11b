"""A time as a cut of the log: the position of the last event recorded at or before it,
found by sampling positions, agrees with reading every event's time."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from events import cut
from events.cut import cut_at, position_at
from events.sql_store import SqlEventStore
from events.tables import events
from tests.integration.conftest import new_event


def test_an_empty_log_cuts_at_zero(store: SqlEventStore) -> None:
    from kernel.clock import utcnow

    with store.engine.connect() as conn:
        assert position_at(conn, utcnow()) == 0
        assert cut_at(conn, None) is None


def test_the_cut_is_the_last_event_recorded_at_or_before_the_time(
        store: SqlEventStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cut, "PROBES", 3)  # many rounds over a short log
    for size in (1, 3, 1, 1, 5, 2, 1, 4, 1, 1, 1, 6, 1, 2, 1):  # a batch shares one time
        store.append([new_event() for _ in range(size)])
    with store.engine.connect() as conn:
        stamped = [(p, t) for p, t in conn.execute(select(events.c.position, events.c.recorded_at)
                                                    .order_by(events.c.position))]
        tick = timedelta(microseconds=1)
        asked = [t + d for _, t in stamped for d in (-tick, timedelta(0), tick)]
        for moment in asked:
            expected = max((p for p, t in stamped if t <= moment), default=0)
            assert position_at(conn, moment) == expected, moment
        first, head = stamped[0][1], stamped[-1][0]
        assert position_at(conn, first - timedelta(days=1)) == 0
        assert position_at(conn, first + timedelta(days=1)) == head
        assert position_at(conn, first.replace(tzinfo=None)) == max(
            p for p, t in stamped if t == first)  # naive is UTC
