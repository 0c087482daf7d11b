"""Which subjects a batch closes: the same answer as the contract's own subject rules."""

from __future__ import annotations

from contract.subject import subjects_closed_by_last
from evaluators.subjects import closing_seqs, subjects_closed_at
from tests.unit.evaluators.factories import Stream


def busy_stream() -> Stream:
    stream = Stream()
    stream.add("session.started")
    stream.turn(thumbs="up")
    stream.turn(answer=None)
    stream.add("episode.completed", outcome="success")
    stream.add("feedback.given", thumbs="down")  # between episodes: in no turn
    stream.turn()
    stream.turn(thumbs="down")
    stream.add("episode.completed", outcome="failure")
    stream.turn()
    return stream


def test_only_turn_user_and_episode_completed_can_close_a_subject() -> None:
    stream = busy_stream()
    expected = [e.stream_seq for e in stream.events if e.type in ("turn.user", "episode.completed")]

    assert closing_seqs(reversed(stream.events)) == {stream.stream_id: expected}


def test_agrees_with_subjects_closed_by_last_for_every_prefix() -> None:
    events = busy_stream().events
    for kind in ("turn", "episode"):
        for index, event in enumerate(events):
            expected = subjects_closed_by_last(events[: index + 1], kind)
            assert subjects_closed_at(events, [event.stream_seq], [kind]) == expected, (kind, index)


def test_a_window_starting_after_an_episode_gives_the_same_subjects() -> None:
    events = busy_stream().events
    boundary = next(e.stream_seq for e in events if e.type == "episode.completed")
    later = [e.stream_seq for e in events if e.stream_seq > boundary]

    whole = subjects_closed_at(events, later, ["turn", "episode"])
    window = subjects_closed_at(events[boundary:], later, ["turn", "episode"])

    assert window == whole
    assert [s.kind for s in whole].count("episode") == 1 and len(whole) == 3
