"""A reward's row: its fields under the reward table's column names, JSON columns as plain
objects, the errors as the ``error`` text."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone

from evaluators.reward_writes import to_row
from evaluators.tables import reward_records
from kernel.sql import text_array
from tests.unit.evaluators.test_chain_bytes import a_reward


def test_a_row_has_exactly_the_columns_of_the_table() -> None:
    reward = a_reward()
    for record in (reward, replace(reward, errors=({"item": "g", "message": "m", "kind": "type"},),
                                   score=None, tenant="acme")):
        row = to_row(record)
        assert set(row) == {column.name for column in reward_records.columns}
        assert row["error"] == (json.dumps([dict(e) for e in record.errors], sort_keys=True)
                                if record.errors else None)
        assert row["event_ids"] == list(record.event_ids) and type(row["event_ids"]) is list
        assert type(row["components"]) is dict and type(row["gates"]) is dict
        for field in ("reward_id", "subject_id", "score", "split", "tenant", "position", "hash"):
            assert row[field] == getattr(record, field)
    assert "errors" in reward.__dict__  # the record itself is left as it was


def test_created_at_is_stored_in_utc() -> None:
    two_hours_ahead = datetime(2024, 6, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    row = to_row(replace(a_reward(), created_at=two_hours_ahead))
    assert row["created_at"] == two_hours_ahead and row["created_at"].utcoffset() == timedelta(0)


def test_text_array_quotes_every_element() -> None:
    assert text_array([]) == "{}"
    assert text_array(["a", 'q"uote', "back\\slash", "NULL", ""]) == (
        '{"a","q\\"uote","back\\\\slash","NULL",""}')
