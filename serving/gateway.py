"""The chat gateway: a request in, the right adapter's answer out, the exchange recorded.

``prepare`` does everything that can refuse a request before the model runs (the model
name, the session, the messages, the tools, the choice of adapter); ``generate`` runs
the backend; recording goes through ``record`` (the ingest path, in the caller's
tenant). A recording that fails fails the request (``RecordingFailed``, a 503): an
answer is never served unrecorded. Non-streamed answers record opening and closing
events in one batch after generating; streamed ones record the opening before the first
byte and the closing before the last (``api.routes.chat``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from events.ingest import Author, BatchRejected, ClientEvent
from harness.session import storable
from harness.stops import STOPS
from kernel.errors import DomainError
from serving.batcher import Delta, GenResult
from serving.choice import Choice, Chooser
from serving.exchange import Exchange, Outcome, check_turn
from serving.names import parse_model
from serving.openai_shapes import ChatRequest
from serving.prompting import (
    chat_messages,
    check_tools,
    offered_tools,
    routing_text,
    system_text,
    tool_call_in,
)
from serving.sessions import Sessions

log = logging.getLogger(__name__)


class Unavailable(DomainError):
    """The request cannot be served now; a later try may succeed (HTTP 503)."""

    code = "unavailable"


class RecordingFailed(Unavailable):
    """The exchange could not be recorded: nothing is served."""

    code = "recording_failed"


class BackendFailed(Unavailable):
    """The backend did not generate (unreachable, timed out)."""

    code = "backend_unavailable"


class Backend(Protocol):
    name: str

    def generate(self, choice: Choice, messages: list[dict[str, str]], max_new_tokens: int,
                 temperature: float, seed: int | None, stops: list[str],
                 on_delta: Delta | None, stop_after: str | None = None) -> GenResult:
        """The model's answer to ``messages`` with the adapter ``choice`` names; a backend
        that knows the stop rule ``stop_after`` (``harness.stops``) may end there early
        (the gateway cuts the text there either way)."""


Record = Callable[[Sequence[ClientEvent], Author], None]


@dataclass
class ChatGateway:
    chooser: Chooser
    sessions: Sessions
    backend: Backend
    record_events: Record

    def prepare(self, request: ChatRequest, author: Author, session_header: str | None) -> Exchange:
        check_turn(request)
        ref = parse_model(request.model)
        session = self.sessions.for_request(session_header, request.user, author.tenant)
        if ref.kind == "auto" and request.messages[-1].role == "tool" and session.last_specialist:
            ref = parse_model(session.last_specialist)  # a tool's result goes back to its caller
        choice = self.chooser.choose(ref, routing_text(request))
        harness = choice.config.harness
        check_tools(harness, request)
        tools = offered_tools(harness, choice.specialist, request)
        messages = chat_messages(system_text(harness, choice.specialist, tools), request.messages)
        return Exchange(session, choice, request, messages, tools)

    def generate(self, exchange: Exchange, on_delta: Delta | None = None) -> Outcome:
        request, limits = exchange.request, exchange.choice.config.harness.limits
        wanted = request.token_limit or limits.max_tokens
        temperature = limits.temperature if request.temperature is None else request.temperature
        started = time.perf_counter()
        tools, rule = exchange.tools, request.stop_after
        at_end = bool(tools or rule)  # a tool call, or where a rule cuts, is known only then
        result = self.backend.generate(
            exchange.choice, exchange.messages, min(wanted, limits.max_tokens),
            min(temperature, limits.max_temperature), request.seed, request.stop or [],
            None if at_end else on_delta, stop_after=rule)
        text, finish = cut_by_rule(result.text, result.finish, rule)
        text = storable(text)
        call = tool_call_in(text, tools)
        finish = "tool_calls" if call else finish
        if at_end and on_delta is not None and call is None and text:
            on_delta(text)
        return Outcome(text, call, result.prompt_tokens, result.completion_tokens, finish,
                       (time.perf_counter() - started) * 1000)

    def record(self, events: Sequence[ClientEvent], author: Author) -> None:
        try:
            self.record_events(events, author)
        except BatchRejected:
            raise  # the client's content is what the log refuses (too large): its 4xx
        except Exception as exc:
            log.exception("recording a chat exchange failed")
            raise RecordingFailed(f"the exchange could not be recorded, so it is not served: "
                                  f"{type(exc).__name__}: {str(exc)[:200]}") from exc

    def warm(self) -> None:
        """Load what serves each specialist now (a one-token answer each), so the first
        client does not wait for the base model to load."""
        for specialist in sorted(self.chooser.slots()):
            choice = self.chooser.choose(parse_model(specialist), "")
            self.backend.generate(choice, [{"role": "user", "content": "hi"}], 1, 0.0, None, [], None)

    def complete(self, request: ChatRequest, author: Author,
                 session_header: str | None) -> tuple[Exchange, Outcome]:
        """A whole non-streamed exchange: prepared, generated, recorded in one batch."""
        exchange = self.prepare(request, author, session_header)
        outcome = self.generate(exchange)
        started = time.perf_counter()
        self.record([*exchange.opening(), *exchange.closing(outcome)], author)
        exchange.record_ms = (time.perf_counter() - started) * 1000
        return exchange, outcome


def cut_by_rule(text: str, finish: str, rule: str | None) -> tuple[str, str]:
    """The answer up to where the named stop rule says it is complete (then it stopped)."""
    found = STOPS.get(rule) if rule is not None else None
    end = found(text) if found is not None else None
    return (text, finish) if end is None else (text[:end], "stop")
