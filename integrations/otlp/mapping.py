"""GenAI spans to the client events of the catalogue: sessions, turns, route decisions, tool
calls and answers. Pure.

* A trace is an episode of a session (stream ``otel:<conversation>``: ``gen_ai.conversation.id``
  or ``session.id`` of the span or of another span of its trace (``Conversations``), else the
  trace id; a tenant's under ``otel:<tenant>:…``). Its
  first GenAI span opens it with ``session.started``; its root span, if a GenAI one (a lone
  chat call, or ``invoke_agent``), ends it with ``episode.completed`` (failure when the
  span's status is ERROR).
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
    skipped: Counter[str] = field(default_factory=Counter)

    @property
    def skipped_spans(self) -> int:
        return sum(self.skipped.values())

    def summary(self) -> str:
        return "; ".join(f"{n} skipped: {why}" for why, n in self.skipped.most_common())


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


def map_spans(spans: list[Span], tenant: str | None, conversations: Conversations | None = None) -> Mapped:
    out, opened = Mapped(), set()
    conversations = conversations or Conversations()
    conversations.learn(spans, tenant)
    for span in sorted(spans, key=lambda s: (s.start_ns, s.end_ns)):
        operation = str(span.attributes.get("gen_ai.operation.name") or "")
        if not operation:
            out.skipped[NOT_GENAI] += 1
            continue
        made = _SpanEvents(span, tenant, conversations.of(span, tenant))
        if operation in INFERENCE:
            if not made.inference():
                out.skipped[NO_CONTENT] += 1
                continue
        elif operation == "execute_tool":
            made.tool_result()
        elif operation not in AGENT:
            out.skipped[UNKNOWN_OPERATION] += 1
            continue
        if not span.parent_span_id:
            made.add("episode.completed", {"outcome": "failure" if span.error else "success"},
                     span.end_ns)
        if span.trace_id not in opened and made.events:
            opened.add(span.trace_id)
            out.events.append(made.session_started())
        out.events += made.events
        out.mapped_spans += 1
    return out


class _SpanEvents:
    def __init__(self, span: Span, tenant: str | None, conversation: str) -> None:
        self.span, self.tenant = span, tenant
        self.stream = f"otel:{tenant}:{conversation}" if tenant else f"otel:{conversation}"
        self.events: list[ClientEvent] = []

    def inference(self) -> bool:
        inputs, outputs = input_messages(self.span), output_messages(self.span)
        if not inputs and not outputs:
            return False
        since_answer = _after_last_answer(inputs)
        for message in since_answer:
            if message.role == "tool" and message.tool_call_id:
                self.add("tool.result", {"call_id": message.tool_call_id, "ok": True,
                                         "output": message.text}, self.span.start_ns)
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
        self.add("tool.result", {"call_id": str(a.get("gen_ai.tool.call.id") or self.span.span_id),
                                 "ok": not self.span.error, "output": a.get("gen_ai.tool.call.result"),
                                 "tool": a.get("gen_ai.tool.name")}, self.span.end_ns)

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
        self.events.append(ClientEvent(
            stream_id=self.stream, type=kind, payload=payload, occurred_at=_time(at_ns),
            event_id=self._id(f"{self.span.span_id}|{kind}|{len(self.events)}")))

    def session_started(self) -> ClientEvent:
        harness = self.span.resource.get("service.name")
        return ClientEvent(stream_id=self.stream, type="session.started",
                           payload={"harness": str(harness) if harness else None,
                                    "otel_trace_id": self.span.trace_id},
                           event_id=self._id(f"session|{self.stream}"))  # whichever span opens it

    def _id(self, what: str) -> uuid.UUID:
        return uuid.uuid5(NAMESPACE, f"{self.tenant or ''}|{self.span.trace_id}|{what}")


def _after_last_answer(messages: list[Message]) -> list[Message]:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "assistant":
            return messages[i + 1:]
    return [m for m in messages if m.role != "system"]


def _time(ns: int) -> datetime | None:
    return datetime.fromtimestamp(ns / 1e9, UTC) if ns > 0 else None
