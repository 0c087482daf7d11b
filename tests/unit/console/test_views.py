"""Pure parts of the console's view models: the gate record, rollbacks in an alias
timeline, alias periods, a session's turns."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from console.views.gate import gate_view, interval_text
from console.views.sessions import group
from console.views.specialists import periods, timeline
from events.model import EventMetadata, RecordedEvent
from trainer.registry.model import AliasMove

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def move(position: int, target: str | None, previous: str | None, reason: str = "why",
         alias: str = "production", kind: str = "move") -> AliasMove:
    return AliasMove(position, "coding", alias, target, previous, "key:ops", reason,
                     T0 + timedelta(hours=position), kind)


def test_a_gate_record_today_and_with_a_statistical_gates_fields():
    today = {"promote": False, "reason": "margin too small", "metric": "offline",
             "comparison": {"heldout_margin": {"successor": 0.1, "parent": 0.2, "delta": -0.1,
                                               "required": 0.0, "ok": False},
                            "n_pairs": 7,
                            "criteria": {"brevity": {"successor": 0.5, "parent": 0.7, "tolerance": 0.05,
                                                     "gated": True, "ok": False}}}}
    view = gate_view(today)
    assert view["headlines"][0]["name"] == "held-out margin" and view["headlines"][0]["ok"] is False
    assert view["criteria"][0]["delta"] == -0.19999999999999996
    assert view["samples"] == [("n pairs", 7)] and view["interval"] is None and view["seed"] is None
    later = {**today, "interval": {"low": -0.2, "high": 0.01, "level": 0.95}, "seed": 7,
             "samples": 1000, "bootstrap_resamples": 2000}
    view = gate_view(later)
    assert interval_text(view["interval"]) == "[-0.2000, 0.0100] at 95%"
    assert view["seed"] == 7 and ("samples", 1000) in view["samples"]
    assert view["other"] == {"bootstrap_resamples": 2000}  # unknown fields are shown, not lost
    assert interval_text([0.1, 0.2]) == "[0.1000, 0.2000]" and gate_view(None) is None


def test_a_gate_reason_is_shown_rounded_and_a_shared_tolerance_once():
    record = {"promote": False, "reason": "criterion 'brevity' regressed: 0.027970770994822185 "
              "< 0.15475747982660928 - 0.03; rollout reward 0.0625 vs parent 0.0625",
              "comparison": {"tolerances": {"*": 0.03, "task_success": 0.0}, "criteria": {
                  "brevity": {"successor": 0.028, "parent": 0.155, "tolerance": 0.03, "gated": True},
                  "helpfulness": {"successor": 0.5, "parent": 0.5, "tolerance": 0.03, "gated": True},
                  "task_success": {"successor": 0.1, "parent": 0.1, "tolerance": 0.0, "gated": True}}}}
    view = gate_view(record)
    assert view["reason"] == ("criterion 'brevity' regressed: 0.0280 < 0.1548 - 0.03; "
                              "rollout reward 0.0625 vs parent 0.0625")
    assert view["default_tolerance"] == 0.03
    assert [(c["name"], c["own"]) for c in view["criteria"]] == [
        ("brevity", False), ("helpfulness", False), ("task_success", True)]


def test_the_timeline_marks_rollbacks_and_when_each_move_was_superseded():
    moves = [move(4, "coding@1", None, alias="staging"),  # newest first
             move(3, "coding@1", "coding@2", "regression", kind="rollback"),
             move(2, "coding@2", "coding@1"),
             move(1, "coding@1", None)]
    rows = timeline(moves)
    assert [r.rollback for r in rows] == [False, True, False, False]
    assert rows[2].until == moves[1].moved_at and rows[1].until is None and rows[0].until is None


def test_periods_say_which_version_served_when():
    spans = periods([move(2, "coding@2", "coding@1"), move(1, "coding@1", None),
                     move(3, "coding@1", None, alias="staging")])
    assert [(s["adapter_id"], s["until"]) for s in spans["production"]] == [
        ("coding@1", T0 + timedelta(hours=2)), ("coding@2", None)]
    assert list(spans) == ["production", "staging"]


def event(seq: int, kind: str, **payload) -> RecordedEvent:
    return RecordedEvent(uuid.uuid4(), "s-1", seq, seq, kind, 1, payload, EventMetadata(),
                         T0, "d", "p", "h")


def test_a_sessions_events_group_into_turns():
    events = [event(1, "session.started"), event(2, "turn.user", text="hi"),
              event(3, "route.decided", specialist="agent"),
              event(4, "tool.called", call_id="c1", tool="web.search"),
              event(5, "tool.called", call_id="c2", tool="web.fetch"),
              event(6, "tool.result", call_id="c2", ok=True), event(7, "tool.result", call_id="c1", ok=False),
              event(8, "turn.assistant", text="done"), event(9, "feedback.given", rating=0.5),
              event(10, "x.custom"), event(11, "turn.user", text="again"),
              event(12, "episode.completed", outcome="success")]
    preamble, turns, closing = group(events)
    assert [e.stream_seq for e in preamble] == [1] and [e.stream_seq for e in closing] == [12]
    first = turns[0]
    assert first.route.stream_seq == 3 and [a.stream_seq for a in first.answers] == [8]
    assert [(t["call"].stream_seq, t["result"].stream_seq) for t in first.tools] == [(4, 7), (5, 6)]
    assert [f.stream_seq for f in first.feedback] == [9] and [o.type for o in first.other] == ["x.custom"]
    assert turns[1].number == 2 and turns[1].user.payload["text"] == "again"
