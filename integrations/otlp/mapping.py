"""GenAI spans to the client events of the catalogue: sessions, turns, route decisions, tool
calls and answers. Pure.

* A trace is an episode of a session (stream ``otel:<conversation>``: ``gen_ai.conversation.id``
  or ``session.id`` of the span or of another span of its trace (``Conversations``), else the
  trace id; a tenant's under ``otel:<tenant>:…``). Its
  first GenAI span opens it with ``session.started``; its root span, if a GenAI one (a lone
  chat call, or ``invoke_agent``), ends it with ``episode.completed`` (its outcome from the
  span's status: OK success, ERROR failure, unset none: ``root_end``).
* An inference span (``gen_ai.operation.name`` chat, text_completion, generate_content):
  the tool responses the model was sent since its last answer (``tool.result``), the
  user's last message (``turn.user``), the route when ``hcp.route.specialist`` and
  ``hcp.route.adapter_version`` say it (``route.decided``), the answer (``turn.assistant``,
  with the model, output tokens, response id, trace and span ids) and each tool call it
  asked for (``tool.called``).
* An ``execute_tool`` span: its result (``tool.result``).

Every event's id is derived from the tenant, trace, span and its place in the span, so a
span sent twice adds nothing. A span that maps to nothing is skipped and counted by reason.
"""

from __future__ import annotations

import uuid
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from events.ingest import ClientEvent
from integrations.otlp.decode import Span
from integrations.otlp.linking import TraceState, marker_id
from integrations.otlp.messages import Message, input_messages, output_messages

NAMESPACE = uuid.UUID("6f1c4d1e-3b0a-4c53-9a7e-0a5b0f3e2d11")  # fixed: ids must not change
INFERENCE = frozenset({"chat", "text_completion", "generate_content"})
AGENT = frozenset({"invoke_agent", "create_agent", "invoke_workflow"})
NOT_GENAI = "not a GenAI span (no gen_ai.operation.name)"
NO_CONTENT = ("an inference span without message content (turn content capture on, e.g. "
              "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT)")
UNKNOWN_OPERATION = "a gen_ai.operation.name this server does not map"


@dataclass
class Mapped:
    events: list[ClientEvent] = field(default_factory=list)
    mapped_spans: int = 0
    late_spans: int = 0  # of traces whose episode had ended: recorded after the end
    skipped: Counter[str] = field(default_factory=Counter)

    @property
    def skipped_spans(self) -> int:
        return sum(self.skipped.values())

    def summary(self) -> str:
        said = [f"{n} skipped: {why}" for why, n in self.skipped.most_common()]
        if self.late_spans:
            said.append(f"{self.late_spans} recorded after their trace's episode ended (a span "
                        "of a trace whose root span had already come)")
        return "; ".join(said)


class Conversations:
    """Which conversation each recent trace belongs to: a span without
    ``gen_ai.conversation.id`` (a tool's, an agent's) joins the one its trace's other spans
    named, in this export or an earlier one to this process (the last ``keep`` traces)."""

    def __init__(self, keep: int = 10_000) -> None:
        self.keep = keep
        self._of: OrderedDict[tuple[str | None, str], str] = OrderedDict()

    def learn(self, spans: list[Span], tenant: str | None) -> None:
        for span in spans:
            named = _named_conversation(span)
            if named:
                self._of[(tenant, span.trace_id)] = named
                self._of.move_to_end((tenant, span.trace_id))
        while len(self._of) > self.keep:
            self._of.popitem(last=False)

    def of(self, span: Span, tenant: str | None) -> str:
        return _named_conversation(span) or self._of.get((tenant, span.trace_id)) or span.trace_id


def _named_conversation(span: Span) -> str:
    return str(span.attributes.get("gen_ai.conversation.id") or span.attributes.get("session.id")
               or span.resource.get("session.id") or "")


LATE = "a span of a trace whose episode had ended (recorded after it)"


def map_spans(spans: list[Span], tenant: str | None, conversations: Conversations | None = None,
              states: dict[str, TraceState] | None = None) -> Mapped:
    """The events of ``spans``, each trace's in the order its spans ended (so a root's end
    comes after its children's), on the stream ``states`` says
    the trace already has (integrations/otlp/linking.py), else on a new one opened by the
    trace's ``session.started``."""
    out, conversations = Mapped(), conversations or Conversations()
    conversations.learn(spans, tenant)
    states = states if states is not None else {}
    made_of: dict[str, list[_SpanEvents]] = {}
    executed = {str(s.attributes.get("gen_ai.tool.call.id")) for s in spans
                if s.attributes.get("gen_ai.operation.name") == "execute_tool"}
    for span in sorted(spans, key=lambda s: (s.start_ns, s.end_ns)):
        state = states.setdefault(span.trace_id, TraceState())
        if state.stream is None:  # the first mapped span of a new trace names its stream
            state.stream = _stream_of(tenant, conversations.of(span, tenant))
        made = _map_span(span, tenant, state, executed, out)
        if made is None:
            continue
        out.mapped_spans += 1
        out.late_spans += state.ended
        made_of.setdefault(span.trace_id, []).append(made)
    for trace_id, of_trace in made_of.items():
        out.events += _trace_events(trace_id, of_trace, states[trace_id], tenant)
    return out


def _map_span(span: Span, tenant: str | None, state: TraceState, executed: set[str],
              out: Mapped) -> _SpanEvents | None:
    operation = str(span.attributes.get("gen_ai.operation.name") or "")
    if not operation:
        out.skipped[NOT_GENAI] += 1
        return None
    made = _SpanEvents(span, tenant, str(state.stream), state, executed)
    if operation in INFERENCE:
        if not made.inference():
            out.skipped[NO_CONTENT] += 1
            return None
    elif operation == "execute_tool":
        made.tool_result()
    elif operation not in AGENT:
        out.skipped[UNKNOWN_OPERATION] += 1
        return None
    # The root's end is the episode's, unless the trace joined a gateway session, whose
    # episodes the gateway decides (a lone chat call there is one of its turns).
    if not span.parent_span_id and not (state.linked and operation in INFERENCE):
        made.add("episode.completed", root_end(span), span.end_ns)
    return made


def root_end(span: Span) -> dict[str, Any]:
    """The episode's end a root span records. Only a status the application set says how
    it went: OK is a success, ERROR a failure. Instrumentations leave it unset on most
    spans that did not raise, which says nothing of the goal, so unset records no outcome
    (the contract judges such an episode as one nobody ended), and ``otel_status`` says
    which it was."""
    payload: dict[str, Any] = {"otel_trace_id": span.trace_id, "otel_status": span.status}
    if span.status != "unset":
        payload["outcome"] = "failure" if span.error else "success"
    return payload


def _trace_events(trace_id: str, made: list[_SpanEvents], state: TraceState,
                  tenant: str | None) -> list[ClientEvent]:
    """A trace's events, span by span in the order the spans ended (a root ends after its
    children, a tool before the model call that reads its result), its marker first when
    it has none yet."""
    ended = sorted(enumerate(made), key=lambda m: (m[1].span.end_ns, m[1].span.start_ns, m[0]))
    events = [event for _, m in ended for _, _, event in m.timed]
    if state.marked:
        return events
    state.marked = True
    service = made[0].span.resource.get("service.name")
    kind, event_type = ("linked", "trace.linked") if state.linked else ("session", "session.started")
    payload: dict[str, Any] = ({"trace_id": trace_id, "service": str(service) if service else None}
                               if state.linked else
                               {"harness": str(service) if service else None, "otel_trace_id": trace_id})
    marker = ClientEvent(stream_id=str(state.stream), type=event_type, payload=payload,
                         event_id=marker_id(tenant, trace_id, kind))
    return [marker, *events]


def _stream_of(tenant: str | None, conversation: str) -> str:
    return f"otel:{tenant}:{conversation}" if tenant else f"otel:{conversation}"


class _SpanEvents:
    def __init__(self, span: Span, tenant: str | None, stream: str, state: TraceState,
                 executed: set[str]) -> None:
        self.span, self.tenant, self.stream, self.state = span, tenant, stream, state
        self.executed = executed  # call ids an execute_tool span of this request reports
        self.timed: list[tuple[int, int, ClientEvent]] = []  # (when, order, event)

    def inference(self) -> bool:
        inputs, outputs = input_messages(self.span), output_messages(self.span)
        if not inputs and not outputs:
            return False
        if self.state.linked:  # the gateway recorded this exchange as it served it
            return True
        since_answer = _after_last_answer(inputs)
        for message in since_answer:
            answered = message.tool_call_id
            # A tool's result is recorded once: from its execute_tool span when there is
            # one, else from the next model call's input.
            if (message.role == "tool" and answered and answered not in self.executed
                    and self._first(answered)):
                self.add("tool.result", {"call_id": answered, "ok": True, "output": message.text},
                         self.span.start_ns)
        if since_answer and since_answer[-1].role == "user":
            self.add("turn.user", {"text": since_answer[-1].text}, self.span.start_ns)
        self._route()
        for answer in (m for m in outputs if m.role == "assistant"):
            self.add("turn.assistant", self._answer(answer), self.span.end_ns)
            for call in answer.tool_calls:
                self.add("tool.called", {"call_id": call.call_id, "tool": call.name,
                                         "arguments": call.arguments}, self.span.end_ns)
        return True

    def tool_result(self) -> None:
        a = self.span.attributes
        call_id = str(a.get("gen_ai.tool.call.id") or self.span.span_id)
        if self._first(call_id):
            self.add("tool.result", {"call_id": call_id, "ok": not self.span.error,
                                     "output": a.get("gen_ai.tool.call.result"),
                                     "tool": a.get("gen_ai.tool.name")}, self.span.end_ns)

    def _first(self, call: str) -> bool:
        """Whether no result of ``call`` is recorded yet (and now claim it)."""
        if call in self.state.tool_results:
            return False
        self.state.tool_results.add(call)
        return True

    def _route(self) -> None:
        a = self.span.attributes
        specialist, adapter = a.get("hcp.route.specialist"), a.get("hcp.route.adapter_version")
        if isinstance(specialist, str) and isinstance(adapter, str):
            self.add("route.decided", {"specialist": specialist, "adapter_version": adapter},
                     self.span.start_ns)

    def _answer(self, answer: Message) -> dict[str, Any]:
        a = self.span.attributes
        tokens = a.get("gen_ai.usage.output_tokens", a.get("gen_ai.usage.completion_tokens"))
        return {"text": answer.text, "model": a.get("gen_ai.response.model") or a.get("gen_ai.request.model"),
                "tokens": tokens if isinstance(tokens, int) and tokens >= 0 else None,
                "response_id": a.get("gen_ai.response.id"), "otel_trace_id": self.span.trace_id,
                "otel_span_id": self.span.span_id}

    def add(self, kind: str, payload: dict[str, Any], at_ns: int) -> None:
        order = len(self.timed)
        self.timed.append((at_ns, order, ClientEvent(
            stream_id=self.stream, type=kind, payload=payload, occurred_at=_time(at_ns),
            event_id=self._id(f"{self.span.span_id}|{kind}|{order}"))))

    def _id(self, what: str) -> uuid.UUID:
        return uuid.uuid5(NAMESPACE, f"{self.tenant or ''}|{self.span.trace_id}|{what}")


def _after_last_answer(messages: list[Message]) -> list[Message]:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "assistant":
            return messages[i + 1:]
    return [m for m in messages if m.role != "system"]


def _time(ns: int) -> datetime | None:
    return datetime.fromtimestamp(ns / 1e9, UTC) if ns > 0 else None
