"""A fixed, varied set of subjects and contracts, and what scoring made of them when this
file was written (scoring_golden.json): the oracle for rewrites of the input builder,
the contract engine's fast paths and the reward records, which must not change a byte.

Everything here is deterministic (event ids from counters, fixed times). To record the
expected values again, on purpose, after a change that is meant to alter them:

    python -m tests.unit.evaluators.scoring_corpus --write
"""

from __future__ import annotations

import hashlib
import json
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from contract.document import parse_contract
from contract.evaluate import compile_contract, evaluate_subject
from contract.inputs import build_input
from contract.rubric import DEFAULT_LIMITS, Limits
from contract.subject import Subject, finished_subjects
from contract.vocabulary import INPUT_VARIABLES
from evaluators.model import RewardRecord, VersionRef
from evaluators.scoring import ScoringVersion, score_subject
from events.model import EventMetadata, RecordedEvent

GOLDEN = Path(__file__).with_name("scoring_golden.json")
T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)

HEAD = """
[contract]
name = "{name}"
description = "scoring corpus"
schema_version = 1

[harness]
base_model = "hcp-tiny"
tool_allowlist = ["web.search", "files.read"]

[harness.router]
default_specialist = "chat"

[harness.specialists.chat]
[harness.specialists.coding]
tools = ["files.read"]

[evaluation]
subject = "{subject}"
aggregation = "{aggregation}"
{extra}
"""


def _criteria(*items: tuple[str, float, str]) -> str:
    return "".join(f"\n[[evaluation.criteria]]\nid = \"{i}\"\nweight = {w}\nexpression = '''{e}'''\n"
                   for i, w, e in items)


def _gates(*items: tuple[str, str]) -> str:
    return "".join(f"\n[[evaluation.gates]]\nid = \"{i}\"\nexpression = '''{e}'''\n" for i, e in items)


def _contract(name: str, subject: str, body: str, eligible: str, aggregation: str = "weighted_mean",
              extra: str = "") -> str:
    return (HEAD.format(name=name, subject=subject, aggregation=aggregation, extra=extra) + body
            + f"\n[training]\neligible = '''{eligible}'''\n")


BENCH = _contract("bench", "turn", _criteria(
    ("answered", 1.0, "counts.answered_turns > 0 ? 1.0 : 0.0"),
    ("feedback", 2.0, "feedback.count > 0 ? (feedback.rating + 1.0) / 2.0 : 0.5"),
    ("brevity", 1.0, "size(assistant_text) <= 400 ? 1.0 : 0.5"),
    ("tools", 1.0, "counts.tool_calls == 0 ? 1.0 : double(counts.tool_calls - counts.tool_errors) "
                   "/ double(counts.tool_calls)"),
    ("on_topic", 0.5, "user_text.contains('help') ? 1.0 : 0.8"),
) + _gates(("allowed_tools", "counts.tools_disallowed == 0")), "score >= 0.6")

LOOPS = _contract("loops", "episode", _criteria(
    ("brevity", 1.0, "counts.answered_turns == 0 ? 0.0 : double(turns.filter(t, t.answered && "
                     "size(t.assistant_text) <= 200).size()) / double(counts.answered_turns)"),
    ("events", 1.0, "events.exists(e, e.type == 'x.note') ? 0.5 : 1.0"),
    ("outcome", 2.0, "outcome == 'success' ? 1.0 : (outcome == 'abandoned' ? 0.25 : 0.0)"),
    ("score", 1.0, "outcome_score == null ? 0.5 : (outcome_score > 1.0 ? 1.0 : "
                   "(outcome_score < 0.0 ? 0.0 : outcome_score))"),
), "score >= 0.4 && !truncated && size(harness.tool_allowlist) > 0 && split == 'train'",
    aggregation="geometric_mean", extra='[evaluation.split]\nheld_out_fraction = 0.3\nseed = 7\n'
                                         'by = "user_text"\n')

EVERYTHING = _contract("everything", "turn", _criteria(
    ("dur", 1.0, "duration_s == null ? 0.5 : (duration_s > 10.0 ? 0.2 : 0.9)"),
    ("spec", 1.0, "specialist == 'coding' ? 1.0 : (size(specialists) > 1 ? 0.3 : 0.6)"),
    ("adapter", 1.0, "adapter_version == null ? 0.1 : 0.7"),
    ("subject", 1.0, "subject.first_seq > 3 ? 0.4 : 0.8"),
    ("thumbs", 1.0, "feedback.thumbs_up > feedback.thumbs_down ? 1.0 : 0.5"),
    ("trunc", 1.0, "truncated ? 0.0 : 1.0"),
    ("calls", 1.0, "tool_calls.all(c, c.ok == true || c.ok == null) ? 1.0 : 0.25"),
) + _gates(("unanswered", "counts.tools_unanswered < 2"),
           ("typed", "counts.by_type.size() < 8")),
    "components.dur > 0.3 && gates.typed && score > 0.2", aggregation="min",
    extra='[evaluation.applies_to]\nspecialists = ["chat", "coding"]\n')

BROKEN = _contract("broken", "turn", _criteria(
    ("range", 1.0, "double(counts.events)"),
    ("missing", 1.0, "counts.by_type['tool.called'] > 0 ? 1.0 : 0.0"),
    ("rating", 1.0, "feedback.rating == null ? 0.5 : (feedback.rating + 1.0) / 2.0"),
    ("type", 1.0, "feedback.count > 1 ? 'many' : 1.0"),
) + _gates(("gate", "outcome == 'success' || counts.by_type['feedback.given'] > 0")), "score > 0.0",
    extra='[evaluation.applies_to]\nevent_types = ["turn.assistant"]\n'
          'when = "size(user_text) > 4"\n')

WHEN_ELIGIBLE = _contract("eligibility", "episode", _criteria(
    ("fb", 1.0, "feedback.count > 0 ? (feedback.rating + 1.0) / 2.0 : 0.5"),
    ("size", 1.0, "size(events) > 20 ? 0.25 : 0.75"),
) + _gates(("tools", "counts.tools_disallowed == 0")), "feedback.comments.size() > 0 ? 1 : true",
    extra='[evaluation.split]\nheld_out_fraction = 0.5\nseed = 3\n')

CONTRACTS = {"bench": BENCH, "loops": LOOPS, "everything": EVERYTHING, "broken": BROKEN,
             "eligibility": WHEN_ELIGIBLE}


class _Stream:
    def __init__(self, number: int, tenant: str | None = "acme", specialist: str | None = "chat") -> None:
        self.stream_id, self.tenant, self.specialist = f"corpus-{number}", tenant, specialist
        self.events: list[RecordedEvent] = []
        self.number = number

    def add(self, type_: str, payload: dict[str, Any], *, specialist: str | None = "",
            tenant: str | None = "", schema_version: int = 1, occurred: bool = True) -> None:
        seq = len(self.events) + 1
        who = self.specialist if specialist == "" else specialist
        meta = EventMetadata(
            occurred_at=T0 + timedelta(seconds=7 * seq) if occurred else None,
            tenant=self.tenant if tenant == "" else tenant, specialist=who,
            adapter_version=f"{who}@2" if who else None)
        self.events.append(RecordedEvent(
            uuid.UUID(int=(self.number << 32) + seq), self.stream_id, seq, self.number * 10_000 + seq,
            type_, schema_version, payload, meta, T0 + timedelta(seconds=7 * seq, milliseconds=3),
            "0" * 64, "0" * 64, "0" * 64))

    def turn(self, text: str, answer: str | None, feedback: dict[str, Any] | None = None,
             route: str | None = "chat", **answer_extra: Any) -> None:
        self.add("turn.user", {"text": text})
        if route is not None:
            self.add("route.decided", {"specialist": route, "adapter_version": f"{route}@3"})
        if answer is not None:
            self.add("turn.assistant", {"text": answer, **answer_extra})
        if feedback is not None:
            self.add("feedback.given", feedback, schema_version=2 if "thumbs" in feedback else 1)

    def tool(self, call: str, tool: str, result: dict[str, Any] | None, **kwargs: Any) -> None:
        self.add("tool.called", {"call_id": call, "tool": tool, "arguments": {"q": call}}, **kwargs)
        if result is not None:
            self.add("tool.result", {"call_id": call, **result})


def _nested(depth: int) -> Any:
    return {"d": _nested(depth - 1)} if depth else "leaf"


def streams() -> list[_Stream]:
    """Conversations covering what the input builder distinguishes."""
    made: list[_Stream] = []
    s = _Stream(1)  # the bench's shape: routes, a tool call, thumbs, an outcome
    for turn in range(3):
        s.turn(f"please help with {turn}", "an answer " * (turn * 30),
               {"thumbs": ("up", "down")[turn % 2]}, route=("chat", "coding")[turn % 2])
        if turn == 1:
            s.tool("c1", "web.search", {"ok": turn % 2 == 0, "output": "result"})
    s.add("episode.completed", {"outcome": "success"})
    made.append(s)

    s = _Stream(2, tenant=None, specialist=None)  # no metadata specialist, ratings (schema 1)
    s.add("session.started", {})
    s.add("x.note", {"free": [1, 2.5, None, True, {"k": "v"}], "n": 3})
    s.turn("hi", "hello", {"rating": 0.5, "comment": "nice"}, route=None, model="m1", tokens=3)
    s.turn("again", "more", {"rating": 3.0}, route="coding", model="m2", tokens=True)
    s.add("turn.assistant", {"text": "and more", "tokens": 4})
    s.add("feedback.given", {"rating": True, "thumbs": "up"}, schema_version=2)
    s.add("feedback.given", {"thumbs": "sideways", "comment": 7})
    s.add("episode.completed", {"outcome": "abandoned", "score": 0.3})
    made.append(s)

    s = _Stream(3, tenant="t1")  # tools: disallowed, unanswered, failed, errors; mixed tenants
    s.turn("run tools", "done")
    s.tool("a", "files.read", {"ok": True, "output": {"lines": ["x"] * 3}})
    s.tool("b", "python.run", {"ok": False, "error": "boom"}, specialist="coding")
    s.tool("c", "web.search", None, specialist="coding")
    s.tool("d", "files.read", {"ok": "yes", "error": 5})
    s.add("tool.result", {"call_id": "orphan", "ok": True})
    s.add("x.note", {}, tenant="t2")
    s.turn("help me", "sure", {"thumbs": "down", "comment": "c" * 20_000})
    s.add("episode.completed", {"outcome": "failed", "score": -2})
    made.append(s)

    s = _Stream(4)  # truncation: long texts, deep arguments, many items
    s.turn("long " * 14_000, "x" * 70_000)
    s.add("tool.called", {"call_id": "deep", "tool": "web.search", "arguments": _nested(14)})
    s.add("tool.result", {"call_id": "deep", "ok": True, "output": list(range(1_200))})
    s.add("x.big", {str(i): i for i in range(1_100)})
    s.turn("no answer", None)
    s.add("episode.completed", {"outcome": 5})
    made.append(s)

    s = _Stream(5, tenant="many")  # caps on counts: > 200 turns, > 200 tool calls, > 500 events
    for turn in range(205):
        s.add("turn.user", {"text": f"t{turn}"})
        s.add("turn.assistant", {"text": "ok"})
        if turn % 2 == 0:
            s.tool(f"k{turn}", ("web.search", "files.write")[turn % 4 == 0], {"ok": turn % 3 == 0})
    s.add("episode.completed", {"outcome": "success", "score": 1})
    made.append(s)

    s = _Stream(6)  # no times of their own, feedback before any turn, an empty turn
    s.add("feedback.given", {"thumbs": "up"}, occurred=False)
    s.add("turn.user", {"text": 5}, occurred=False)
    s.add("route.decided", {"specialist": "", "adapter_version": ""}, occurred=False)
    s.add("turn.assistant", {"text": None, "model": 3}, occurred=False, specialist=None)
    s.add("turn.user", {}, occurred=False)
    s.add("episode.completed", {}, occurred=False)
    made.append(s)
    return made


def subjects() -> list[Subject]:
    found: list[Subject] = []
    for stream in streams():
        turns = finished_subjects(stream.events, "turn")
        found += turns[:6] + finished_subjects(stream.events, "episode")
    return found


def versions() -> list[ScoringVersion]:
    """Each contract, and the last once more with little fuel: its bound does not fit on
    big subjects (the metered way), some of which run out of fuel."""
    made = []
    texts = [*CONTRACTS.items(), ("eligibility", WHEN_ELIGIBLE)]
    for number, (name, text) in enumerate(texts, 1):
        limits = Limits(fuel=2_500) if number == len(texts) else DEFAULT_LIMITS
        compiled = compile_contract(parse_contract(text), limits)
        made.append(ScoringVersion(VersionRef(name, number, compiled.content_hash), compiled))
    return made


def record_json(record: RewardRecord) -> dict[str, Any]:
    """A record's every field but its creation time (and its repr, to tell types apart)."""
    # (``judgements``, added later, only where there are some: no corpus contract has a judge)
    fields = sorted((k, repr(v)) for k, v in record.__dict__.items()
                    if k != "created_at" and (k != "judgements" or v))
    wire = {k: v for k, v in record.to_json().items() if k != "created_at"}
    wire["subject"]["event_ids"] = _digest(repr(wire["subject"]["event_ids"]))
    return {"json": wire, "repr": _digest(repr(fields)), "type": type(record).__name__}


def observed() -> dict[str, Any]:
    """What scoring makes of the corpus now: every input variable of every subject, each
    version's evaluation on it, and the reward records of all versions together."""
    out: dict[str, Any] = {}
    all_versions = versions()
    for subject in subjects():
        harness = all_versions[0].compiled.document.harness
        full = build_input(subject, harness)
        out[subject.id] = {
            "input": {name: _digest(repr(full[name])) for name in INPUT_VARIABLES if name in full},
            "some": {",".join(names): _digest(repr(build_input(subject, harness, names)))
                     for names in SOME},
            "evaluations": {v.ref.ref: evaluate_subject(v.compiled, full).to_json() for v in all_versions},
            "records": [record_json(r) for r in score_subject(subject, all_versions)],
        }
    return out


# Inputs built with only some variables (the evaluator's way), each as a whole.
SOME = [("counts", "feedback", "subject", "user_text"), ("tool_calls", "specialist"),
        ("turns", "assistant_text", "adapter_version"), ("events", "duration_s", "specialists"),
        ("outcome", "outcome_score", "harness"), ("truncated", "counts")]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _as_json(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=str))


if __name__ == "__main__" and "--write" in sys.argv:
    GOLDEN.write_text(json.dumps(_as_json(observed()), sort_keys=True, indent=0) + "\n")
    print(f"wrote {GOLDEN}")
