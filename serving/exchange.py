"""The events one chat exchange records, in the built-in harness's vocabulary. Pure.

Opening (before the model runs): ``session.started`` when the turn starts an episode,
``tool.result`` for each tool message the client sent back since the model's last
answer, ``turn.user`` for the user's message (with the ``context`` the model was given
before it, on every turn: what a successor is trained on), and
``route.decided`` (specialist, router scores and strategy, adapter version, id and
digest, contract version and hash). Closing (after it ran): ``turn.assistant`` (text,
token counts, latency, finish reason, digest) and ``tool.called`` for a tool call. So
the subjects the evaluators cut (a turn closes at the next ``turn.user``, an episode
at ``episode.completed``) are the ones the built-in harness's sessions make.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from events.catalogue import (
    RouteDecided,
    SessionStarted,
    ToolCalled,
    ToolResult,
    TurnAssistant,
    TurnUser,
    typed,
)
from events.ingest import Author, ClientEvent
from events.model import EventMetadata, NewEvent
from harness.routing import learned_input
from harness.session import storable
from inference.types import TokenLogprob
from kernel.errors import Invalid
from serving.choice import Choice
from serving.constrained import Constraint
from serving.continuity import ConversationHead, head_event
from serving.openai_shapes import ChatRequest, FunctionCall, Message, ToolCallIn, ToolSpec
from serving.prompting import ToolCall, routing_text
from serving.sessions import SessionState

HARNESS_NAME = "hcp-gateway"


class MessagesInvalid(Invalid):
    field = "messages"


@dataclass(frozen=True)
class Outcome:
    text: str
    tool_call: ToolCall | None
    prompt_tokens: int
    completion_tokens: int
    finish: str  # stop | length | tool_calls
    latency_ms: float
    logprobs: tuple[TokenLogprob, ...] | None = None  # when the request asked


@dataclass
class Exchange:
    session: SessionState
    choice: Choice
    request: ChatRequest
    messages: list[dict[str, str]]  # what the model is given, contract system message first
    tools: list[ToolSpec]  # the request's tools this specialist may call
    constraint: Constraint | None = None  # what decoding held the answer to (serving.constrained)
    assistant_id: uuid.UUID = field(default_factory=uuid.uuid4)
    record_ms: float | None = None  # what recording it cost (the response says so)
    # The client's trace (``traceparent``) to link to this session, and its marker's id
    # (``serving.traces``); None when the request had none, or the trace has a marker.
    trace_id: str | None = None
    trace_marker_id: uuid.UUID | None = None

    @property
    def tool_names(self) -> list[str]:
        return [t.function.name for t in self.tools]

    @property
    def completion_id(self) -> str:
        return f"chatcmpl-{self.assistant_id.hex}"

    def _event(self, kind: str, payload: dict[str, Any], n: int) -> ClientEvent:
        c = self.choice
        event_id = self.assistant_id if kind == "turn.assistant" else uuid.uuid5(
            self.assistant_id, f"{n}:{kind}")
        return ClientEvent(stream_id=self.session.stream_id, type=kind, payload=payload,
                           event_id=event_id, specialist=c.specialist,
                           adapter_version=c.adapter_version, contract=c.config.ref,
                           correlation_id=self.session.session_id)

    def opening(self) -> list[ClientEvent]:
        items: list[tuple[str, dict[str, Any]]] = []
        if not self.session.episode_open:
            items.append(typed(SessionStarted(harness=HARNESS_NAME, user=self.request.user)))
        linked = [] if self.trace_marker_id is None else [ClientEvent(
            stream_id=self.session.stream_id, type="trace.linked", event_id=self.trace_marker_id,
            payload={"trace_id": self.trace_id, "service": None, "via": "traceparent"},
            correlation_id=self.session.session_id)]
        # A result already in the session (an instrumented client's execute_tool span, sent
        # over OTLP before this request) is recorded once.
        known = {e.payload.get("call_id") for e in self.session.events if e.type == "tool.result"}
        items += [typed(ToolResult(**r)) for r in tool_results(self.request)
                  if r["call_id"] not in known]
        last = self.request.messages[-1]
        if last.role == "user":
            # Every user turn carries what the model was given before it, not only an
            # episode's first: a turn is a subject of its own, and a later turn's answer
            # ("No, that's not what I asked for." -> ...) trained without its conversation
            # would be paired with other users' answers to the same words.
            payload: dict[str, Any] = {"text": storable(last.text),
                                       "context": [{"role": m["role"],
                                                    "content": storable(m["content"])}
                                                   for m in self.messages[:-1]]}
            if self.tool_names:
                payload["tools"] = self.tool_names
            if self.request.hcp and self.request.hcp.task is not None:
                payload["task"] = self.request.hcp.task  # the client's hidden check (a harness)
            items.append(typed(TurnUser(**payload)))
        items.append(typed(RouteDecided(**self.route_payload())))
        events = [self._event(kind, payload, n) for n, (kind, payload) in enumerate(items)]
        at = 0 if self.session.episode_open else 1  # after the episode's session.started
        return [*events[:at], *linked, *events[at:]]

    def route_payload(self) -> dict[str, Any]:
        c = self.choice
        return {"specialist": c.specialist, "adapter_version": c.adapter_version,
                "adapter_id": c.adapter_id, "adapter_digest": c.digest, "alias": c.alias,
                "served_base": c.served_base, "base_model": c.base.name,
                "base_weights_sha256": c.base.weights_sha256, "contract": c.config.ref,
                "contract_hash": c.config.content_hash, "scores": c.route.scores,
                "fallback": c.route.fallback, "strategy": c.strategy, "model": c.requested,
                "notes": c.notes, "router_version": c.router_version,
                "router_digest": c.router_digest,
                "routed_on": storable(learned_input(routing_text(self.request)))}

    def closing(self, outcome: Outcome) -> list[ClientEvent]:
        c = self.choice
        items: list[tuple[str, dict[str, Any]]] = [typed(TurnAssistant(
            text=outcome.text, tokens=outcome.completion_tokens,
            prompt_tokens=outcome.prompt_tokens, latency_ms=round(outcome.latency_ms, 3),
            finish_reason=outcome.finish, model=c.adapter_version,
            adapter_digest=c.digest, base_weights_sha256=c.base.weights_sha256,
            **({"constrained": self.constraint.kind} if self.constraint else {})))]
        if outcome.tool_call is not None:
            call = outcome.tool_call
            items.append(typed(ToolCalled(call_id=call.call_id, tool=call.name,
                                          arguments=call.arguments)))
        return [self._event(kind, payload, 100 + n) for n, (kind, payload) in enumerate(items)]

    def head(self, outcome: Outcome, author: Author) -> NewEvent:
        """The conversation's head after this answer (``serving.continuity``): what a client
        that keeps no session continues it by."""
        c = self.choice
        meta = EventMetadata(actor=author.actor, tenant=author.tenant, specialist=c.specialist,
                             adapter_version=c.adapter_version, contract=c.config.ref,
                             correlation_id=self.session.session_id)
        return head_event(self.request.messages, answer_message(outcome), self.session.session_id,
                          self.completion_id, meta, uuid.uuid5(self.assistant_id, ConversationHead.TYPE))


def answer_message(outcome: Outcome) -> Message:
    """The answer as the response gives it, so as a client sends it back."""
    call = outcome.tool_call
    if call is None:
        return Message(role="assistant", content=outcome.text)
    function = FunctionCall(name=call.name, arguments=call.openai()["function"]["arguments"])
    return Message(role="assistant", tool_calls=[ToolCallIn(id=call.call_id, function=function)])


def tool_results(request: ChatRequest) -> list[dict[str, Any]]:
    """The tool messages after the model's last answer: the results of its tool calls."""
    results = []
    for message in reversed(request.messages):
        if message.role != "tool":
            if message.role == "assistant":
                break
            continue
        results.append({"call_id": message.tool_call_id or "", "ok": True,
                        "output": storable(message.text)})
    return list(reversed(results))


def check_turn(request: ChatRequest) -> None:
    """The conversation must end with what the model answers: a user or a tool message."""
    role = request.messages[-1].role
    if role not in ("user", "tool"):
        exc = MessagesInvalid(f"the last message is from '{role}'; it must be the user's or a "
                              "tool's result")
        exc.field = f"messages[{len(request.messages) - 1}].role"
        raise exc
