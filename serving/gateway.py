"""The chat gateway: a request in, the right adapter's answer out, the exchange recorded.

``prepare`` does everything that can refuse a request before the model runs (the model
name, the session, the messages, the tools, the choice of adapter); ``generate`` asks
the engine (``inference.engine``: embedded or vLLM); recording goes through ``record``
(the ingest path, in the caller's tenant). A recording that fails fails the request
(``RecordingFailed``, a 503): an answer is never served unrecorded. Non-streamed answers
record opening and closing events in one batch after generating; streamed ones record
the opening before the first byte and the closing before the last (``api.routes.chat``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from events.errors import EventIdConflict, WrongExpectedSeq
from events.ingest import Author, BatchRejected, ClientEvent
from events.model import NewEvent
from harness.session import storable
from inference.engine import Engine, EngineUnavailable
from inference.names import parse_model
from inference.stops import cut_by_rule
from inference.types import Decoding, Delta, Grammar, Readiness, Request
from kernel.errors import Unavailable
from serving.choice import Chooser
from serving.constrained import constraint_of
from serving.exchange import Exchange, Outcome, check_turn
from serving.openai_shapes import ChatRequest
from serving.prompting import (
    chat_messages,
    check_tools,
    offered_tools,
    routing_text,
    system_text,
    tool_call_in,
)
from serving.request_checks import check_request
from serving.sessions import Sessions
from serving.traces import LINKED, marker_id, trace_of

log = logging.getLogger(__name__)


class RecordingFailed(Unavailable):
    """The exchange could not be recorded: nothing is served."""

    code = "recording_failed"


BackendFailed = EngineUnavailable  # the engine did not generate (unreachable, timed out)


# The client's events of an exchange, and the events the server adds to the same batch.
Record = Callable[[Sequence[ClientEvent], Author, Sequence[NewEvent]], None]


@dataclass
class ChatGateway:
    chooser: Chooser
    sessions: Sessions
    engine: Engine
    record_events: Record
    precision: str = "auto"  # of the base's weights (HCP_SERVING_PRECISION)
    device: str | None = None  # None: the engine's

    def prepare(self, request: ChatRequest, author: Author, session_header: str | None,
                traceparent: str | None = None) -> Exchange:
        check_turn(request)
        ref = parse_model(request.model)
        session = self.sessions.for_request(session_header, request.user, author.tenant,
                                            request.messages)
        trace = trace_of(traceparent)
        if ref.kind == "auto" and request.messages[-1].role == "tool" and session.last_specialist:
            ref = parse_model(session.last_specialist)  # a tool's result goes back to its caller
        choice = self.chooser.choose(ref, routing_text(request))
        harness = choice.config.harness
        check_request(request, harness.limits, choice.config.ref, self.engine.name,
                      self.engine.constrains)
        check_tools(harness, request)
        tools = offered_tools(harness, choice.specialist, request)
        constraint = constraint_of(request, tools)  # a 400 for what the decoder cannot enforce
        messages = chat_messages(system_text(harness, choice.specialist, tools), request.messages)
        exchange = Exchange(session, choice, request, messages, tools, constraint=constraint)
        if trace is not None and not self.sessions.trace_marked(author.tenant, trace):
            exchange.trace_id, exchange.trace_marker_id = trace, marker_id(author.tenant, trace, LINKED)
        return exchange

    def generate(self, exchange: Exchange, on_delta: Delta | None = None) -> Outcome:
        request, limits = exchange.request, exchange.choice.config.harness.limits
        wanted = request.token_limit or limits.max_tokens
        temperature = limits.temperature if request.temperature is None else request.temperature
        started = time.perf_counter()
        tools, rule = exchange.tools, request.stop_after
        at_end = bool(tools or rule)  # a tool call, or where a rule cuts, is known only then
        constraint = exchange.constraint
        decoding = Decoding(min(temperature, limits.max_temperature), request.seed,
                            tuple(request.stop or []), rule,
                            grammar=Grammar(constraint.grammar, constraint.kind) if constraint else None,
                            logprobs=(request.top_logprobs or 0) if request.logprobs else None)
        result = self.engine.generate(
            Request(exchange.choice.target(self.precision, self.device), tuple(exchange.messages),
                    min(wanted, limits.max_tokens), decoding),
            None if at_end else on_delta)
        text, finish = cut_by_rule(result.text, result.finish, rule)
        text = storable(text)
        call = tool_call_in(text, tools)
        finish = "tool_calls" if call else finish
        if at_end and on_delta is not None and call is None and text:
            on_delta(text)
        return Outcome(text, call, result.prompt_tokens, result.completion_tokens, finish,
                       (time.perf_counter() - started) * 1000, result.logprobs)

    def record(self, events: Sequence[ClientEvent], author: Author,
               server_events: Sequence[NewEvent] = ()) -> None:
        try:
            self.record_events(events, author, server_events)
        except (BatchRejected, WrongExpectedSeq):
            raise  # the client's content is what the log refuses (too large): its 4xx; or
            # the stream moved on since the caller read it (it reads again)
        except Exception as exc:
            log.exception("recording a chat exchange failed")
            # The kind only: the database's text names hosts, files and SQL (it is logged).
            raise RecordingFailed(f"the exchange could not be recorded, so it is not served "
                                  f"({type(exc).__name__}); retry") from exc

    def warm(self) -> None:
        """Load what serves each specialist now (a one-token answer each), so the first
        client does not wait for the base model to load."""
        for specialist in sorted(self.chooser.slots()):
            choice = self.chooser.choose(parse_model(specialist), "")
            self.engine.warm(choice.target(self.precision, self.device))

    def readiness(self) -> Readiness:
        return self.engine.readiness()

    def judge(self, request: ChatRequest, author: Author) -> tuple[Exchange, Outcome]:
        """A judge model's call (evaluators/judging.py): answered, not recorded as a
        conversation; the evaluator that asked records the verdict (``judge.verdict``)."""
        exchange = self.prepare(request, author, None)
        return exchange, self.generate(exchange)

    def complete(self, request: ChatRequest, author: Author, session_header: str | None,
                 traceparent: str | None = None) -> tuple[Exchange, Outcome]:
        """A whole non-streamed exchange: prepared, generated, recorded in one batch."""
        exchange = self.prepare(request, author, session_header, traceparent)
        outcome = self.generate(exchange)
        started = time.perf_counter()
        self._save(exchange, [*exchange.opening(), *exchange.closing(outcome)], author,
                   [exchange.head(outcome, author)])
        exchange.record_ms = (time.perf_counter() - started) * 1000
        return exchange, outcome

    def begin(self, exchange: Exchange, author: Author) -> None:
        """A streamed exchange's opening events, recorded before its first byte."""
        self._save(exchange, exchange.opening(), author)

    def finish(self, exchange: Exchange, outcome: Outcome, author: Author) -> None:
        """A streamed exchange's closing events, recorded before its last chunk."""
        self.record(exchange.closing(outcome), author, [exchange.head(outcome, author)])

    def _save(self, exchange: Exchange, events: Sequence[ClientEvent], author: Author,
              server_events: Sequence[NewEvent] = ()) -> None:
        """Record ``events``; when another request of the trace (or its spans) wrote the
        trace's marker first, record them without this one's (the trace stays where the
        first put it)."""
        try:
            self.record(events, author, server_events)
        except RecordingFailed as exc:
            conflict = exc.__cause__
            marker = exchange.trace_marker_id
            if not (isinstance(conflict, EventIdConflict) and conflict.event_id == marker):
                raise
            self.record([e for e in events if e.event_id != marker], author, server_events)

