"""The relay's wire values, assembled from the stored rows' text, are the events' wire form:
the same JSON as ``event_to_bytes`` of the stored event, and on PostgreSQL (the payload kept
as the canonical JSON that was digested) the same bytes."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy.engine import Engine

from events.kafka_io import event_headers, event_to_bytes
from events.model import EventMetadata, NewEvent
from events.relay import EventsFeed
from events.sql_store import SqlEventStore


def _events() -> list[NewEvent]:
    plus_two = timezone(timedelta(hours=2))
    return [
        NewEvent("s-1", "turn.user", {"text": "héllo \"quoted\" \\ \n tab\t ✓", "n": 1,
                                      "nested": {"b": [1, 2.5, None, True], "a": {}}}),
        NewEvent("s-3", "turn.assistant", {}, metadata=EventMetadata(
            occurred_at=datetime(2026, 5, 1, 12, 0, 0, tzinfo=plus_two), actor="user-ü",
            tenant="acme", specialist="coding", adapter_version="coding@3", contract="c@2",
            causation_id=uuid.uuid4(), correlation_id=uuid.uuid4(), claimed_actor="bob")),
        NewEvent("s-2", "reward.recorded", {"score": 0.25, "list": ["x"] * 3}, schema_version=2,
                 metadata=EventMetadata(actor="key:k1", occurred_at=datetime(2026, 1, 1, tzinfo=UTC))),
    ]


@pytest.mark.parametrize("extra", [0, 40])  # a few rows go in one INSERT, more in a COPY
def test_wire_values_are_the_wire_form_of_the_stored_events(engine: Engine, extra: int) -> None:
    store = SqlEventStore(engine)
    store.append(_events() + [NewEvent(f"t-{i % 7}", "turn.user", {"n": i, "t": "ü" * i})
                              for i in range(extra)])
    stored = store.read_all(0, 100, raw=True)
    wire = store.read_wire(0, 100)
    assert [w.position for w in wire] == [e.position for e in stored] == list(range(1, 4 + extra))
    for w, event in zip(wire, stored, strict=True):
        assert json.loads(w.value) == json.loads(event_to_bytes(event))
        assert (w.stream_id, w.type, w.schema_version) == (event.stream_id, event.type,
                                                          event.schema_version)
        if engine.dialect.name == "postgresql":
            assert w.value == event_to_bytes(event)


def test_the_feed_pages_by_position_with_the_headers_of_each_event(engine: Engine) -> None:
    store = SqlEventStore(engine)
    store.append(_events())
    feed = EventsFeed(store, "t.events")
    page = feed.read_after(1, 1)
    [event] = store.read_all(1, 1, raw=True)
    assert [m.position for m in page] == [2]
    assert page[0].key == b"s-3"
    assert list(page[0].headers) == event_headers(event)
    assert [m.position for m in feed.read_after(0, 10)] == [1, 2, 3]
    assert feed.read_after(3, 10) == []


def _awkward() -> list[NewEvent]:
    # Every character JSON escapes, and some it does not (PostgreSQL text holds no NUL).
    text = "q\"b\\s/ \b\f\n\r\t \x01\x1f\x7f \u2028\u2029 é ✓ 😀"
    return [
        NewEvent(f"s-{text}", f"t.{text}", {"k": text, text: [text]}, metadata=EventMetadata(
            occurred_at=datetime(1, 1, 1, tzinfo=UTC), actor=text, tenant=text, specialist=text,
            adapter_version=text, contract=text, claimed_actor=text)),
        NewEvent("s-2", "t", {}, metadata=EventMetadata(
            occurred_at=datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC), claimed_actor="")),
        NewEvent("s-3", "t", {"n": 1}, metadata=EventMetadata(
            occurred_at=datetime(2026, 3, 29, 1, 30, 0, 5,
                                 tzinfo=timezone(timedelta(hours=-9, minutes=-30))))),
    ]


def test_awkward_text_and_times_are_written_as_the_wire_form_writes_them(engine: Engine) -> None:
    store = SqlEventStore(engine)
    store.append(_awkward())
    stored = store.read_all(0, 100, raw=True)
    wire = store.read_wire(0, 100)
    assert len(wire) == len(stored) == 3
    for w, event in zip(wire, stored, strict=True):
        assert json.loads(w.value) == json.loads(event_to_bytes(event))
        if engine.dialect.name == "postgresql":
            assert w.value == event_to_bytes(event)
