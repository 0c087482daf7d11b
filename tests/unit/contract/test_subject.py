"""Cutting subjects from a stream, and the input expressions see."""

from __future__ import annotations

import random

import pytest

from contract.input_caps import MAX_DEPTH, MAX_EVENTS, MAX_STRING
from contract.inputs import build_input
from contract.subject import finished_subjects, subjects_closed_by_last
from tests.unit.contract.factories import Stream, minimal_doc


def conversation() -> Stream:
    s = Stream("chat-1")
    s.add("session.started", harness="web")
    s.turn("hello", "hi there", thumbs="up")
    s.turn("fix my code", "done", rating=0.5)
    return s


def test_a_turn_runs_until_the_next_user_turn_and_keeps_its_feedback() -> None:
    s = conversation()
    [first] = finished_subjects(s.events, "turn")  # the second turn is still open
    assert first.id == "turn:chat-1:2"
    assert [e.type for e in first.events] == [
        "turn.user",
        "route.decided",
        "turn.assistant",
        "feedback.given",
    ]
    s.add("episode.completed", outcome="success")
    turns = finished_subjects(s.events, "turn")
    assert [t.id for t in turns] == ["turn:chat-1:2", "turn:chat-1:6"]
    assert turns[1].events[-1].type == "feedback.given"  # episode.completed is not part of it


def test_an_episode_ends_with_its_completion_and_a_stream_may_hold_several() -> None:
    s = conversation()
    assert finished_subjects(s.events, "episode") == []
    s.add("episode.completed", outcome="success")
    s.turn("again", "sure")
    s.add("episode.completed", outcome="abandoned")
    first, second = finished_subjects(s.events, "episode")
    assert (first.id, first.first_seq, first.last_seq) == ("episode:chat-1:10", 1, 10)
    assert (second.id, second.first_seq, second.last_seq) == ("episode:chat-1:14", 11, 14)


def test_each_subject_is_closed_by_exactly_one_event() -> None:
    s = conversation()
    s.add("episode.completed", outcome="success")
    for kind in ("turn", "episode"):
        closed = [
            subject.id
            for n in range(1, len(s.events) + 1)
            for subject in subjects_closed_by_last(s.events[:n], kind)
        ]
        assert closed == [subject.id for subject in finished_subjects(s.events, kind)]


def test_workers_agree_whatever_order_they_receive_the_prefix_in() -> None:
    s = conversation()
    s.add("episode.completed", outcome="success")
    shuffled = list(s.events)
    random.Random(7).shuffle(shuffled)
    assert finished_subjects(shuffled, "turn") == finished_subjects(s.events, "turn")


def test_one_stream_at_a_time() -> None:
    with pytest.raises(ValueError, match="one stream"):
        a, b = Stream("a"), Stream("b")
        finished_subjects([a.add("turn.user", text="x"), b.add("turn.user", text="y")], "turn")
    with pytest.raises(ValueError, match="kind"):
        finished_subjects([], "session")


def episode_input() -> dict:
    s = Stream("ep-1", specialist="coding")
    s.turn("read a.py", None)
    s.tool("c1", "files.read", ok=True, output="print(1)")
    s.tool("c2", "web.search", ok=False, error="timeout")  # allowed to the harness, not to coding
    s.tool("c3", "files.read", ok=None)
    s.add("turn.assistant", text="It prints 1.", tokens=4)
    s.add("feedback.given", rating=1.0, comment="great")
    s.add("feedback.given", thumbs="down")
    s.add("x.custom.metric", value={"deep": [1, 2, 3]})
    s.add("episode.completed", outcome="success", score=0.9)
    [subject] = finished_subjects(s.events, "episode")
    return build_input(subject, minimal_doc().harness)


def test_the_input_digests_the_subject() -> None:
    data = episode_input()
    assert data["subject"] == {
        "id": "episode:ep-1:12",
        "kind": "episode",
        "stream_id": "ep-1",
        "first_seq": 1,
        "last_seq": 12,
        "closed_by": "episode.completed",
    }
    assert data["user_text"] == "read a.py"
    assert data["assistant_text"] == "It prints 1."
    assert data["turns"][0]["answered"] is True
    assert data["turns"][0]["specialist"] == "coding"
    calls = {c["call_id"]: c for c in data["tool_calls"]}
    assert (calls["c1"]["ok"], calls["c1"]["allowed"], calls["c1"]["output"]) == (True, True, "print(1)")
    assert (calls["c2"]["ok"], calls["c2"]["allowed"], calls["c2"]["error"]) == (False, False, "timeout")
    assert (calls["c3"]["has_result"], calls["c3"]["ok"]) == (False, None)
    assert data["feedback"]["count"] == 2
    assert data["feedback"]["rating"] == 0.0  # mean of +1 and a thumbs down (-1)
    assert data["feedback"]["comments"] == ["great"]
    assert (data["outcome"], data["outcome_score"]) == ("success", 0.9)
    assert data["specialist"] == "coding"
    assert data["counts"]["tool_errors"] == 1
    assert data["counts"]["tools_disallowed"] == 1
    assert data["counts"]["tools_unanswered"] == 1
    assert data["counts"]["by_type"]["x.custom.metric"] == 1
    assert data["duration_s"] == 11.0
    assert data["harness"]["base_model"] == "hcp-tiny"
    assert data["truncated"] is False


def test_oversized_subjects_are_capped_and_say_so() -> None:
    s = Stream("big")
    s.add("turn.user", text="q" * (MAX_STRING + 10))
    nested: dict = {}
    cursor = nested
    for _ in range(MAX_DEPTH + 5):
        cursor["next"] = {}
        cursor = cursor["next"]
    s.add("x.deep", tree=nested)
    for _ in range(MAX_EVENTS):
        s.add("x.noise", n=1)
    s.add("episode.completed", outcome="failure")
    [subject] = finished_subjects(s.events, "episode")
    data = build_input(subject, minimal_doc().harness)
    assert data["truncated"] is True
    assert len(data["events"]) == MAX_EVENTS
    assert data["counts"]["events"] == MAX_EVENTS + 3  # counts see everything
    assert len(data["turns"][0]["user_text"]) == MAX_STRING
    assert data["outcome"] == "failure"
