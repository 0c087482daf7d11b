"""Which session each trace's spans join, decided once, by the log, whatever the batches.

Exporters send a trace in pieces (a BatchSpanProcessor sends spans as they end: children
first, the root last, often in another request, possibly to another process). So the
stream of a trace is not decided by the request that happens to carry a span, but read
from the log:

- the first request that maps a span of a trace writes the trace's **marker**, an event
  whose id is derived from the tenant and the trace (``serving.traces.marker_id``):
  ``session.started`` on a stream of its own (``otel:<tenant>:<conversation>``: the
  conversation a span of that request names, else the trace id), or ``trace.linked`` on
  the chat gateway's session when one of its inference spans answers with a completion
  the gateway recorded
  (``gen_ai.response.id`` = ``chatcmpl-<hex>``, the id of its ``turn.assistant``): an
  instrumented client calling this server's gateway is then one session, not two; the
  gateway itself writes that ``trace.linked`` when the request carried the trace's
  ``traceparent`` (``serving.traces``);
- every later request finds the marker by its id and writes into that stream.

Two requests racing to write the first marker of one trace write the same id: the store
keeps one, the other is told (EventIdConflict) and maps again (``traces.py``). Reads are
by id and by stream, in the key's tenant: another tenant's completion is not found.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from events.model import RecordedEvent
from events.store import EventStore
from integrations.otlp.decode import Span
from serving.traces import marker_id

COMPLETION_PREFIX = "chatcmpl-"
ENDS = ("episode.completed", "session.expired")


@dataclass
class TraceState:
    """What the log already holds of one trace."""

    stream: str | None = None  # where its marker put it; None: no span of it mapped yet
    linked: bool = False  # joined a chat gateway session (the gateway recorded its turns)
    tool_results: set[str] = field(default_factory=set)  # call ids with a tool.result there
    ended: bool = False  # its stream's episode ended after its marker (a root already came)
    marked: bool = False  # its marker is in the log (or in the events being mapped)


def gateway_session(store: EventStore, spans: list[Span], tenant: str | None) -> str | None:
    """The gateway session one of these spans' answers was recorded in, if any."""
    for span in spans:
        response = span.attributes.get("gen_ai.response.id")
        if not isinstance(response, str) or not response.startswith(COMPLETION_PREFIX):
            continue
        try:
            event_id = uuid.UUID(response.removeprefix(COMPLETION_PREFIX))
        except ValueError:
            continue
        found = store.get(event_id, tenant)
        if found is not None and found.type == "turn.assistant" and found.stream_id.startswith("session-"):
            return found.stream_id
    return None


def trace_states(store: EventStore, spans: list[Span], tenant: str | None) -> dict[str, TraceState]:
    """Each trace of ``spans`` as the log has it (see the module's docstring)."""
    by_trace: dict[str, list[Span]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    states: dict[str, TraceState] = {}
    for trace_id, own in by_trace.items():
        state = TraceState()
        for kind, linked in (("session", False), ("linked", True)):
            marker = store.get(marker_id(tenant, trace_id, kind), tenant)
            if marker is not None:
                state.stream, state.linked, state.marked = marker.stream_id, linked, True
                _learn(state, store.read_stream(marker.stream_id, 0, 10_000, tenant), marker)
                break
        else:
            session = gateway_session(store, own, tenant)
            if session is not None:
                state.stream, state.linked = session, True
                _learn(state, store.read_stream(session, 0, 10_000, tenant), None)
        states[trace_id] = state
    return states


def _learn(state: TraceState, events: list[RecordedEvent], marker: RecordedEvent | None) -> None:
    after = marker.stream_seq if marker is not None else 0
    for event in events:
        if event.type == "tool.result":
            state.tool_results.add(str(event.payload.get("call_id") or ""))
        elif event.type in ENDS and event.stream_seq > after and marker is not None:
            state.ended = True
