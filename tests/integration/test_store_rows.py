"""Rows written by the store's bulk path (more than FEW_ROWS events: COPY on PostgreSQL,
its text put together by the store) read back as written, chained, on both databases."""

from __future__ import annotations

import uuid
from datetime import datetime

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from events.model import EventMetadata, NewEvent
from events.sql_append import FEW_ROWS
from events.sql_store import SqlEventStore
from events.tables import events
from kernel.canonical import canonical_json
from kernel.db import is_postgres

# Every character COPY's text format escapes, and text that looks like its escapes.
AWKWARD = ["tab\there", "line\nbreak", "carriage\rreturn", "back\\slash", "\\N", "\\t",
           'quote"d', "ünï©ødé ✓", "", " spaced "]


def awkward_batch(count: int = FEW_ROWS * 2 + 3) -> list[NewEvent]:
    batch: list[NewEvent] = []
    for i in range(count):
        word = AWKWARD[i % len(AWKWARD)]
        meta = EventMetadata(
            occurred_at=datetime.fromisoformat("2026-03-01T10:00:00.123456+02:00") if i % 2 else None,
            actor=word or None, tenant=None, specialist=word, adapter_version=f"a{word}@1",
            contract=f"c{word}", causation_id=uuid.uuid4() if i % 3 else None,
            correlation_id=uuid.uuid4() if i % 4 else None, claimed_actor=word if i % 5 else None)
        batch.append(NewEvent(stream_id=f"s{word}-{i % 4}", type=f"turn.{word}",
                              payload={"text": word, "i": i, "nested": {"b": [word, None, 1.5]}},
                              metadata=meta))
    return batch


def test_awkward_text_in_every_column_reads_back_as_written(store: SqlEventStore, engine: Engine) -> None:
    batch = awkward_batch()
    written = [a.event for a in store.append(batch)]

    assert [e.position for e in written] == list(range(1, len(batch) + 1))
    assert store.read_all(limit=1000, raw=True) == written
    assert store.verify().intact
    with engine.connect() as conn:  # the payload column holds the digested text verbatim
        stored = conn.execute(select(events.c.payload).order_by(events.c.position)).scalars().all()
    assert stored == [new.payload for new in batch]
    assert [canonical_json(p) for p in stored] == [canonical_json(new.payload) for new in batch]


def test_a_repeat_of_the_bulk_batch_stores_nothing_more(store: SqlEventStore) -> None:
    batch = awkward_batch()
    first = [a.event for a in store.append(batch)]
    again = store.append(batch)

    assert not any(a.created for a in again)
    assert [a.event for a in again] == first
    assert store.head() == len(batch)


def test_unusual_field_types_take_the_drivers_path_and_still_chain(store: SqlEventStore,
                                                                   engine: Engine) -> None:
    # A uuid given as its text (an in-process caller's, not the API's): no template, no
    # prepared row head; the row goes through psycopg's formatting.
    if not is_postgres(engine):
        pytest.skip("SQLAlchemy's SQLite Uuid type takes UUID objects only")
    batch = [NewEvent(stream_id="s", type="turn.user", payload={"i": i},
                      metadata=EventMetadata(causation_id=str(uuid.uuid4()) if i == 3 else None))  # type: ignore[arg-type]
             for i in range(FEW_ROWS + 4)]
    written = [a.event for a in store.append(batch)]

    assert [e.stream_seq for e in written] == list(range(1, len(batch) + 1))
    assert store.verify().intact
    read = store.read_all(limit=1000, raw=True)
    assert str(read[3].metadata.causation_id) == str(batch[3].metadata.causation_id)
