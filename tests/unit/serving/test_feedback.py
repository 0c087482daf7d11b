"""Feedback is written where the session stood when it was checked: an expiry that lands
in between makes it read again, and refuse."""

from __future__ import annotations

import uuid

import pytest

from events.ingest import Author, ClientEvent, IngestLimits, ingest
from events.memory_store import InMemoryEventStore
from events.model import EventMetadata, NewEvent
from serving.feedback import EpisodeEnded, FeedbackIn, record_feedback
from serving.sessions import Sessions

ACME = Author("key", "acme")
LIMITS = IngestLimits(10, 10_000)


def chatted(store: InMemoryEventStore) -> uuid.UUID:
    session = uuid.uuid4()
    stream = f"session-{session}"
    ingest(store, [ClientEvent(stream, "session.started", {"harness": "hcp-gateway"}),
                   ClientEvent(stream, "turn.user", {"text": "hi"}),
                   ClientEvent(stream, "turn.assistant", {"text": "hello"})], LIMITS, ACME)
    return session


def test_an_expiry_written_between_the_check_and_the_write_is_seen() -> None:
    store = InMemoryEventStore()
    session = chatted(store)
    calls: list[int] = []

    def record(batch: list[ClientEvent]) -> None:
        calls.append(len(batch))
        if len(calls) == 1:  # the sweeper writes first
            store.append([NewEvent(f"session-{session}", "session.expired", {"idle_timeout_s": 60},
                                   metadata=EventMetadata(tenant="acme"), expected_seq=3)])
        ingest(store, batch, LIMITS, ACME)

    body = FeedbackIn(session=str(session), rating=1.0, end={"outcome": "success"})
    with pytest.raises(EpisodeEnded, match="idle for 60 s"):
        record_feedback(Sessions(store), record, body, "acme")
    assert calls == [2]  # read again after the refused write, and refused there
    assert [e.type for e in store.read_stream(f"session-{session}")][-1] == "session.expired"


def test_feedback_on_an_open_episode_is_written_after_what_was_read() -> None:
    store = InMemoryEventStore()
    session = chatted(store)
    body = FeedbackIn(session=str(session), thumbs="up")
    written = record_feedback(Sessions(store), lambda b: ingest(store, b, LIMITS, ACME), body, "acme")
    assert [e.type for e in written] == ["feedback.given"] and written[0].expected_seq == 3
