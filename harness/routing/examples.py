"""The turns a learned router learns from, read from the log.

A turn's specialist is known when the turn is a harness task (its ``turn.user`` carries
the task and the task its specialist: the family it was drawn from), or when the
specialist that answered it (``route.decided``) earned a reward of at least
``min_reward`` under the router's contract. A turn of neither kind teaches nothing about
where it should have gone and is left out. The text is what the router read when it was
routed (``route.decided``'s ``routed_on``), else what it would have read (the recorded
context's system message and the user's text). Each example is one ``route.decided``
event, named by its id, on its subject's side of the split.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from contract.split import subject_split
from events.model import RecordedEvent
from harness.routing import learned_input, routing_input

TASK, REWARD = "task", "reward"


@dataclass(frozen=True)
class RoutingExample:
    event_id: str  # the route.decided event
    stream_id: str
    text: str
    label: str
    source: str  # TASK or REWARD
    side: str  # "train" or "held_out"


@dataclass(frozen=True)
class Candidate:
    """A routed turn: what it said, who answered, and the task's specialist if any."""

    event_id: str
    stream_id: str
    position: int
    text: str
    user_text: str
    routed: str
    task_specialist: str | None


def candidates(events: Iterable[RecordedEvent]) -> list[Candidate]:
    """Every routed turn of ``events`` (in log order), with the turn.user before it."""
    users: dict[str, dict[str, Any]] = {}  # stream -> its latest turn.user payload
    found = []
    for event in events:
        if event.type == "turn.user":
            users[event.stream_id] = event.payload
        elif event.type == "route.decided" and event.stream_id in users:
            found.append(_candidate(event, users[event.stream_id]))
    return [c for c in found if c is not None]


def _candidate(event: RecordedEvent, user: Mapping[str, Any]) -> Candidate | None:
    routed = event.payload.get("specialist")
    text = user.get("text")
    if not isinstance(routed, str) or not isinstance(text, str):
        return None
    task = user.get("task")
    specialist = task.get("specialist") if isinstance(task, dict) else None
    routed_on = event.payload.get("routed_on")
    if not isinstance(routed_on, str):
        systems = [str(m.get("content", "")) for m in user.get("context") or []
                   if isinstance(m, dict) and m.get("role") == "system"]
        routed_on = learned_input(routing_input(systems, text))
    return Candidate(str(event.event_id), event.stream_id, event.position, routed_on, text,
                     routed, specialist if isinstance(specialist, str) else None)


def labelled(found: Iterable[Candidate], labels: set[str],
             rewards: Mapping[str, float], min_reward: float) -> list[RoutingExample]:
    """The candidates whose specialist is known (see the module's docstring); ``rewards``:
    a stream's reward under the router's contract (its latest)."""
    out = []
    for c in found:
        if c.task_specialist is not None:
            label, source = c.task_specialist, TASK
        elif rewards.get(c.stream_id, float("-inf")) >= min_reward:
            label, source = c.routed, REWARD
        else:
            continue
        if label in labels:
            out.append(RoutingExample(c.event_id, c.stream_id, c.text, label, source,
                                      subject_split(c.user_text, c.user_text)))
    return out
