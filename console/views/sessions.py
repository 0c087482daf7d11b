"""Sessions: the latest ones, and one session's turns in order (route decision, tool calls
with their results, the answer, feedback) with the reward records it produced."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contract.vocabulary import (
    EPISODE_COMPLETED,
    FEEDBACK_GIVEN,
    ROUTE_DECIDED,
    SESSION_STARTED,
    TOOL_CALLED,
    TOOL_RESULT,
    TURN_ASSISTANT,
    TURN_USER,
)
from evaluators.rewards import RewardQuery
from events.model import RecordedEvent
from events.session_search import SessionFilter
from hcp.bootstrap import Container
from kernel.errors import NotFound

PAGE = 50
EVENTS_PAGE = 1000
DOWNSTREAM_REWARDS = 1  # the page lists the rewards itself; downstream counts them


@dataclass
class Turn:
    """One user turn and what followed it, up to the next user turn."""

    number: int
    user: RecordedEvent | None = None
    route: RecordedEvent | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)  # {"call": e, "result": e | None}
    answers: list[RecordedEvent] = field(default_factory=list)
    feedback: list[RecordedEvent] = field(default_factory=list)
    other: list[RecordedEvent] = field(default_factory=list)


def session_filter(tenant: str = "", specialist: str = "", adapter: str = "",
                   outcome: str = "") -> SessionFilter:
    return SessionFilter(tenant.strip() or None, specialist.strip() or None,
                         adapter.strip() or None, outcome.strip() or None)


def latest_sessions(container: Container, before: int | None = None,
                    where: SessionFilter | None = None) -> dict[str, Any]:
    """Sessions newest first by the position of their ``session.started`` event, those
    matching ``where`` only; each with its tenant and how its episode ended."""
    where = where or SessionFilter()
    found = container.session_search.latest(where, before, PAGE)
    starts = found.starts
    # Every session's first event in one read: the window of each stream that ends at its
    # session.started (and starts after the one before it, if the stream was restarted).
    seqs = {start.stream_id: start.stream_seq for start in starts}
    windows = container.store.read_windows({s: (seq, seq) for s, seq in seqs.items()}, SESSION_STARTED)
    ends = {e.stream_id: e for e in container.store.of_types([EPISODE_COMPLETED], list(seqs), raw=False)}
    rows = [{"stream_id": start.stream_id, "position": start.position,
             "event": next((e for e in windows.get(start.stream_id, [])
                            if e.stream_seq == start.stream_seq), None),
             "outcome": _outcome(ends.get(start.stream_id))}
            for start in starts]
    return {"sessions": rows, "older": found.older, "searched_to": found.searched_to,
            "where": where, "specialists": [s.name for s in container.registry.specialists()]}


def _outcome(completed: RecordedEvent | None) -> str | None:
    return None if completed is None else str(completed.payload.get("outcome") or "ended")


def session_page(container: Container, stream_id: str, after_seq: int = 0,
                 with_rewards: bool = True, with_downstream: bool = False) -> dict[str, Any]:
    events = container.store.read_stream(stream_id, after_seq, EVENTS_PAGE + 1)
    if not events and after_seq == 0:
        raise NotFound(f"no session '{stream_id}'")
    shown = events[:EVENTS_PAGE]
    preamble, turns, closing = group(shown)
    rewards = (container.rewards.find(RewardQuery(stream_id=stream_id, limit=500))
               if with_rewards else None)
    return {"stream_id": stream_id, "preamble": preamble, "turns": turns, "closing": closing,
            "count": len(shown), "after_seq": after_seq,
            "more_after": shown[-1].stream_seq if len(events) > EVENTS_PAGE else None,
            "tenants": sorted({e.metadata.tenant or "" for e in shown}),
            "rewards": rewards,
            "downstream": downstream(container, stream_id) if with_downstream else None}


def downstream(container: Container, stream_id: str) -> dict[str, Any]:
    """What the session reached, as ``hcp lineage downstream --stream`` answers: the
    manifests that list its rewards, the versions trained on them and their descendants,
    and when an alias served any of those."""
    reached = container.downstream.of_stream(stream_id, limit=DOWNSTREAM_REWARDS)
    return {"rewards": reached.rewards.count, "manifests": reached.manifests,
            "adapters": reached.adapters, "windows": reached.windows}


def group(events: list[RecordedEvent]) -> tuple[list[RecordedEvent], list[Turn], list[RecordedEvent]]:
    """(events before the first turn, the turns, the episode's end events)."""
    preamble: list[RecordedEvent] = []
    turns: list[Turn] = []
    closing: list[RecordedEvent] = []
    for event in events:
        if event.type == TURN_USER:
            turns.append(Turn(len(turns) + 1, user=event))
        elif event.type == EPISODE_COMPLETED:
            closing.append(event)
        elif not turns:
            preamble.append(event)
        else:
            _place(turns[-1], event)
    return preamble, turns, closing


def _place(turn: Turn, event: RecordedEvent) -> None:
    if event.type == ROUTE_DECIDED and turn.route is None:
        turn.route = event
    elif event.type == TOOL_CALLED:
        turn.tools.append({"call": event, "result": None})
    elif event.type == TOOL_RESULT:
        call_id = event.payload.get("call_id")
        pending = next((t for t in turn.tools if t["result"] is None
                        and t["call"].payload.get("call_id") == call_id), None)
        if pending is not None:
            pending["result"] = event
        else:
            turn.other.append(event)
    elif event.type == TURN_ASSISTANT:
        turn.answers.append(event)
    elif event.type == FEEDBACK_GIVEN:
        turn.feedback.append(event)
    else:
        turn.other.append(event)
