"""Windows from the batches already seen are the windows the store gives."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from evaluators.recent_events import RecentEvents
from evaluators.subjects import SubjectReader
from events.memory_store import InMemoryEventStore
from events.model import NewEvent, RecordedEvent

TYPES = ["turn.user", "turn.assistant", "feedback.given", "episode.completed", "x.note", "session.expired"]


def interleaved_log(seed: int, streams: int = 6, events: int = 400) -> InMemoryEventStore:
    rng = random.Random(seed)
    store = InMemoryEventStore()
    for _ in range(events):
        stream = f"s{rng.randrange(streams)}"
        kind = rng.choices(TYPES, weights=[4, 4, 2, 1, 1, 1])[0]
        store.append([NewEvent(stream, kind, {"text": "x"} if kind.startswith("turn") else {})])
    return store


def batches(log: list[RecordedEvent], rng: random.Random) -> list[Sequence[RecordedEvent]]:
    """Consecutive batches of random sizes; now and then one comes again (a rewind)."""
    out: list[Sequence[RecordedEvent]] = []
    start = 0
    while start < len(log):
        size = rng.randint(1, 40)
        out.append(log[start:start + size])
        if rng.random() < 0.15:
            out.append(log[start:start + size])
        start += size
    return out


@pytest.mark.parametrize("seed", range(8))
def test_subjects_from_remembered_windows_are_those_read_from_the_store(seed: int) -> None:
    store = interleaved_log(seed)
    log = store.read_all(0, 10_000)
    remembering, reads = SubjectReader(store), {"remembering": 0, "forgetful": 0}
    if seed % 2:  # tight bounds: runs cut and streams forgotten all the time
        remembering.recent = RecentEvents(max_events=30, max_streams=4, max_run=10)
    real_read, who = store.read_windows, ["forgetful"]

    def counted(wanted: dict[str, tuple[int, int]], episode_end: str) -> dict[str, list[RecordedEvent]]:
        reads[who[0]] += len(wanted)
        return real_read(wanted, episode_end)

    store.read_windows = counted  # type: ignore[method-assign]
    for batch in batches(log, random.Random(seed)):
        for kinds in (["turn"], ["episode"], ["turn", "episode"]):
            who[0] = "forgetful"  # nothing remembered: every window from the store
            expected = SubjectReader(store).closed_by(batch, kinds)
            who[0] = "remembering"
            assert remembering.closed_by(batch, kinds) == expected
    assert reads["remembering"] < reads["forgetful"] / (1 if seed % 2 else 2)


def test_a_gap_or_a_run_too_long_is_forgotten_until_the_next_episode_end() -> None:
    store = InMemoryEventStore()
    store.append([NewEvent("s", kind, {}) for kind in
                  ["turn.user", "turn.assistant", "turn.user", "episode.completed", "turn.user", "x.a"]])
    one, two, three, four, five, six = store.read_all(0, 10)
    recent = RecentEvents(max_run=2)
    recent.add([one, two])
    assert recent.window("s", 2) == [one, two]
    recent.add([three])  # a third event in a run of at most two
    assert recent.window("s", 3) is None
    recent.add([four, five])  # the episode ends: a new run starts after it
    assert recent.window("s", 4) == [] and recent.window("s", 5) == [five]
    recent.add([five, six])  # five again (redelivered), then six
    assert recent.window("s", 6) == [five, six]
    gap = RecentEvents()
    gap.add([two])  # the stream's start never seen
    assert gap.window("s", 2) is None


def test_memory_is_bounded_in_events_and_streams_the_oldest_forgotten_first() -> None:
    store = InMemoryEventStore()
    for stream in ("a", "b", "c"):
        store.append([NewEvent(stream, "turn.user", {"text": "x"}), NewEvent(stream, "x.note", {})])
    a1, a2, b1, b2, c1, c2 = store.read_all(0, 10)
    recent = RecentEvents(max_events=4)
    recent.add([a1, a2, b1, b2])
    assert recent.window("a", 2) == [a1, a2]
    recent.add([c1, c2])  # six events held: a, extended least recently, goes
    assert recent.window("a", 2) is None
    assert recent.window("b", 2) == [b1, b2] and recent.window("c", 2) == [c1, c2]
    few_streams = RecentEvents(max_streams=1)
    few_streams.add([a1, b1])
    assert few_streams.window("a", 1) is None and few_streams.window("b", 1) == [b1]
