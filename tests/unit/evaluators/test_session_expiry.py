"""Idle sessions of outside traffic end once: one ``session.expired``, whoever sweeps."""

from __future__ import annotations

from datetime import timedelta

from contract.subject import finished_subjects
from evaluators.session_expiry import Checkpoint, SessionExpiry, Timeout
from events.memory_store import InMemoryEventStore
from events.model import EventMetadata, NewEvent
from kernel.clock import utcnow


def log() -> InMemoryEventStore:
    store = InMemoryEventStore()
    meta = EventMetadata(tenant="acme")
    for stream in ("session-a", "session-b", "otel:acme:t1", "harness-1"):
        store.append([NewEvent(stream, "turn.user", {"text": "hello"}, metadata=meta),
                      NewEvent(stream, "turn.assistant", {"text": "hi"}, metadata=meta)])
    store.append([NewEvent("session-b", "episode.completed", {"outcome": "success"}, metadata=meta)])
    return store


def sweeper(store: InMemoryEventStore, marks: dict[str, int], minutes: float,
            timeout: Timeout | None = Timeout(1800, "default@1")) -> SessionExpiry:
    checkpoint = Checkpoint(lambda: marks.get("x", 0), lambda p: marks.__setitem__("x", p))
    return SessionExpiry(store, lambda: timeout, checkpoint,
                         clock=lambda: utcnow() + timedelta(minutes=minutes))


def expired(store: InMemoryEventStore) -> list[tuple[str, int]]:
    return [(e.stream_id, e.payload["last_seq"]) for e in store.events if e.type == "session.expired"]


def test_only_idle_open_sessions_of_outside_traffic_expire_and_only_once() -> None:
    store, marks = log(), {}
    assert sweeper(store, marks, 10).sweep().expired == 0  # not idle long enough
    assert expired(store) == [] and marks.get("x", 0) < store.head()
    swept = sweeper(store, marks, 31).sweep()
    # session-b ended already; harness-1 is not outside traffic (its harness ends it)
    assert swept.expired == 2 and sorted(expired(store)) == [("otel:acme:t1", 2), ("session-a", 2)]
    event = next(e for e in store.events if e.stream_id == "session-a" and e.type == "session.expired")
    assert event.metadata.tenant == "acme" and event.payload["idle_timeout_s"] == 1800
    assert event.payload["contract"] == "default@1"
    for _ in range(2):  # a second sweeper, and the same one again: nothing more
        assert sweeper(store, {}, 31).sweep().expired == 0
        assert sweeper(store, marks, 31).sweep().expired == 0
    assert len(expired(store)) == 2


def test_an_expired_session_closes_its_turn_and_episode() -> None:
    store = log()
    sweeper(store, {}, 31).sweep()
    stream = [e for e in store.events if e.stream_id == "session-a"]
    [turn] = finished_subjects(stream, "turn")
    [episode] = finished_subjects(stream, "episode")
    assert turn.closed_by == episode.closed_by == "session.expired"
    assert [e.type for e in turn.events] == ["turn.user", "turn.assistant"]
    assert episode.events[-1].type == "session.expired"


def test_a_turn_that_arrives_while_the_sweep_looks_is_not_expired() -> None:
    store, marks = log(), {}
    looked = store.stream_tails

    def late_turn(*args, **kwargs):  # the user answers right after the sweep read the tails
        tails = looked(*args, **kwargs)
        store.append([NewEvent("session-a", "turn.user", {"text": "still there?"},
                               metadata=EventMetadata(tenant="acme"))])
        return tails

    store.stream_tails = late_turn  # type: ignore[method-assign]
    swept = sweeper(store, marks, 31).sweep()
    assert [s for s, _ in expired(store)] == ["otel:acme:t1"]
    assert swept.still_open == 1 and marks["x"] < store.head()  # session-a is looked at again
    store.stream_tails = looked  # type: ignore[method-assign]
    assert sweeper(store, marks, 31).sweep().expired == 1
    assert ("session-a", 3) in expired(store)


def test_without_an_idle_timeout_nothing_ends_by_itself() -> None:
    store = log()
    assert sweeper(store, {}, 10_000, timeout=None).sweep().expired == 0
    assert expired(store) == []
