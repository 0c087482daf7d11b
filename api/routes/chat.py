"""The OpenAI-compatible routes: POST /v1/chat/completions and GET /v1/models.

Thin: the gateway (``serving.gateway``) prepares, generates and records; these routes
turn its results into OpenAI's shapes (a JSON body, or server-sent events with
``stream: true``) and name what served in the response headers. A key needs the
``chat:write`` scope: an exchange writes events into the key's tenant.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Body, Depends, Header
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from access.principal import Principal
from api.deps import ContainerDep, require
from api.errors import error_body, openai_shaped
from api.jsonbody import StrictJsonRoute
from api.responses import BODY, SECURED, errors
from kernel.errors import Forbidden, Invalid
from serving.exchange import Exchange, Outcome
from serving.feedback import FeedbackIn, record_feedback
from serving.gateway import ChatGateway, RecordingFailed, Unavailable
from serving.openai_shapes import (
    ChatRequest,
    Delta,
    HcpServed,
    chunk_json,
    completion_json,
    logprobs_json,
    usage_chunk_json,
)

ChatWrite = Annotated[Principal, Depends(require("chat:write"))]


class ChatCompletionOut(BaseModel):
    """OpenAI's chat.completion (or, streamed, chat.completion.chunk events), and ``hcp``:
    what served (also in the X-HCP-* headers)."""

    id: str = Field(description="chatcmpl-<hex>: the id of the recorded turn.assistant")
    object: str
    created: int
    model: str = Field(description="The adapter version that answered, e.g. coding@3")
    choices: list[dict[str, Any]]
    usage: dict[str, int]
    hcp: dict[str, Any]


class RecordedOut(BaseModel):
    event_id: str
    type: str


class FeedbackOut(BaseModel):
    session: str
    recorded: list[RecordedOut]


class ModelListOut(BaseModel):
    object: str
    data: list[dict[str, Any]] = Field(description="auto, then each specialist and its aliases")
router = APIRouter(prefix="/v1", tags=["chat"], route_class=StrictJsonRoute, responses=SECURED)
SessionHeader = Annotated[str | None, Header(alias="X-HCP-Session",
                                             description="Continue this session")]
TraceParent = Annotated[str | None, Header(description="W3C trace context: the trace's spans "
                                           "(POST /v1/traces) join this exchange's session")]
JudgeHeader = Annotated[str | None, Header(
    alias="X-HCP-Judge", description="A judge model's call (operator keys only): answered, not "
    "recorded as a conversation; the evaluator that asks records the verdict")]


def served_headers(exchange: Exchange) -> dict[str, str]:
    """What served, for a client that reads headers (also in the body's ``hcp`` object)."""
    c = exchange.choice
    return {"X-HCP-Session": str(exchange.session.session_id), "X-HCP-Specialist": c.specialist,
            "X-HCP-Adapter-Version": c.adapter_version, "X-HCP-Adapter-Digest": c.digest or "none",
            "X-HCP-Base-Digest": c.base.weights_sha256,
            "X-HCP-Served-Base": "true" if c.served_base else "false",
            "X-HCP-Contract": c.config.ref, "X-HCP-Route": c.strategy,
            **({"X-HCP-Record-Ms": f"{exchange.record_ms:.3f}"} if exchange.record_ms is not None else {})}


def hcp_extra(exchange: Exchange) -> HcpServed:
    c = exchange.choice
    return {"session": str(exchange.session.session_id),
            "session_from": exchange.session.found_by, "specialist": c.specialist,
            "adapter_version": c.adapter_version, "adapter_digest": c.digest,
            "served_base": c.served_base, "base_weights_sha256": c.base.weights_sha256,
            "contract": c.config.ref, "strategy": c.strategy,
            "scores": c.route.scores, "fallback": c.route.fallback, "notes": c.notes}


def unavailable(exc: Unavailable) -> JSONResponse:
    return openai_shaped(JSONResponse(error_body(exc.code, str(exc)), 503,
                                      headers={"Retry-After": "5"}))


@router.post("/chat/completions", response_model=ChatCompletionOut, responses={
    200: {"content": {"text/event-stream": {"schema": {"type": "string"}}},
          "description": "The answer; with stream: true, server-sent chunk events"},
    **BODY, **errors(404, 503)})
async def chat_completions(body: Annotated[ChatRequest, Body()], principal: ChatWrite,
                           container: ContainerDep, session: SessionHeader = None,
                           traceparent: TraceParent = None, judge: JudgeHeader = None) -> Response:
    """An answer from the specialist the model names (or the router picks, for ``auto``),
    recorded in the key's tenant; ``stream: true`` answers with server-sent events."""
    gateway: ChatGateway = await run_in_threadpool(lambda: container.chat)
    author = principal.author
    if judge is not None:
        return await _judge_call(gateway, body, principal)
    if not body.stream:
        try:
            exchange, outcome = await run_in_threadpool(gateway.complete, body, author, session,
                                                        traceparent)
        except Unavailable as exc:
            return unavailable(exc)
        calls = [outcome.tool_call.openai()] if outcome.tool_call else []
        content = None if outcome.tool_call else outcome.text
        logprobs = logprobs_json(outcome.logprobs) if outcome.logprobs is not None else None
        return Response(orjson.dumps(completion_json(
            exchange.completion_id, exchange.choice.adapter_version, content, calls, outcome.finish,
            outcome.prompt_tokens, outcome.completion_tokens, hcp_extra(exchange), logprobs)),
            media_type="application/json", headers=served_headers(exchange))
    exchange = await run_in_threadpool(gateway.prepare, body, author, session, traceparent)
    try:
        await run_in_threadpool(gateway.begin, exchange, author)
    except RecordingFailed as exc:
        return unavailable(exc)
    return StreamingResponse(_stream(gateway, exchange, principal), media_type="text/event-stream",
                             headers={**served_headers(exchange), "Cache-Control": "no-cache"})


async def _judge_call(gateway: ChatGateway, body: ChatRequest, principal: Principal) -> Response:
    """A judge's call: not a conversation, so not recorded (the verdict is, by the caller)."""
    if not principal.operator:
        raise Forbidden("X-HCP-Judge: only an operator key's call is answered unrecorded")
    if body.stream:
        raise Invalid("X-HCP-Judge: a judge's call is not streamed")
    try:
        exchange, outcome = await run_in_threadpool(gateway.judge, body, principal.author)
    except Unavailable as exc:
        return unavailable(exc)
    return Response(orjson.dumps(completion_json(
        exchange.completion_id, exchange.choice.adapter_version, outcome.text, [], outcome.finish,
        outcome.prompt_tokens, outcome.completion_tokens, hcp_extra(exchange))),
        media_type="application/json", headers={**served_headers(exchange), "X-HCP-Recorded": "false"})


def _sse(value: Any) -> bytes:
    return b"data: " + orjson.dumps(value) + b"\n\n"


async def _stream(gateway: ChatGateway, exchange: Exchange, principal: Principal) -> AsyncIterator[bytes]:
    loop, deltas = asyncio.get_running_loop(), asyncio.Queue[str | None]()
    cid, model, created = exchange.completion_id, exchange.choice.adapter_version, int(time.time())
    digest = exchange.choice.digest

    def on_delta(text: str) -> None:
        loop.call_soon_threadsafe(deltas.put_nowait, text)

    def generate() -> Outcome:
        try:
            return gateway.generate(exchange, on_delta)
        finally:
            loop.call_soon_threadsafe(deltas.put_nowait, None)

    task = asyncio.ensure_future(run_in_threadpool(generate))
    yield _sse(chunk_json(cid, model, created, {"role": "assistant", "content": ""}, None, digest))
    while (text := await deltas.get()) is not None:
        yield _sse(chunk_json(cid, model, created, {"content": text}, None, digest))
    try:
        outcome = await task
        await run_in_threadpool(gateway.finish, exchange, outcome, principal.author)
    except Exception as exc:  # noqa: BLE001 (the stream is open: the error is its last event)
        code = exc.code if isinstance(exc, Unavailable) else "internal_error"
        yield _sse(error_body(code, str(exc)[:300]))
        return
    if outcome.tool_call is not None:
        delta: Delta = {"tool_calls": [{"index": 0, **outcome.tool_call.openai()}]}
        yield _sse(chunk_json(cid, model, created, delta, None, digest))
    if outcome.logprobs is not None:  # every token's, in one chunk before the finish
        yield _sse(chunk_json(cid, model, created, {"content": ""}, None, digest,
                              logprobs_json(outcome.logprobs)))
    yield _sse(chunk_json(cid, model, created, {}, outcome.finish, digest))
    if exchange.request.include_usage:
        yield _sse(usage_chunk_json(cid, model, created, outcome.prompt_tokens,
                                    outcome.completion_tokens))
    yield b"data: [DONE]\n\n"


@router.get("/models", response_model=ModelListOut)
def models(_: ChatWrite, container: ContainerDep) -> dict[str, Any]:
    """What ``model`` may name: ``auto`` (the router's choice, the default), each specialist
    the serving contract serves, and each of its aliases."""
    from serving.catalog import model_list

    return model_list(container.chat.chooser, container.aliases)


class ModelOut(BaseModel):
    id: str
    object: str
    created: int
    owned_by: str
    hcp: dict[str, Any] = Field(description="What the name serves now")


@router.get("/models/{model_id:path}", response_model=ModelOut, responses=errors(404))
def model(model_id: str, _: ChatWrite, container: ContainerDep) -> dict[str, Any]:
    """One model ``model`` may name, as ``GET /v1/models`` lists it; a version or an artifact
    digest is described by what it resolves to (404 when it names nothing served)."""
    from serving.catalog import model_entry

    return model_entry(container.chat.chooser, container.aliases, model_id)


@router.post("/feedback", status_code=201, response_model=FeedbackOut,
             responses={**BODY, **errors(404, 409, 503)})
def feedback(body: FeedbackIn, principal: ChatWrite, container: ContainerDep) -> Response:
    """Rate or correct an answer (``completion_id``; default the session's latest) and,
    with ``end``, end the episode: recorded in the answer's session. An answer whose
    episode already ended (the session expired, or was ended) is a 409 ``episode_ended``."""
    gateway = container.chat
    try:
        events = record_feedback(gateway.sessions, lambda batch: gateway.record(
            batch, principal.author), body, principal.tenant)
    except Unavailable as exc:
        return unavailable(exc)
    return JSONResponse({"session": body.session, "recorded": [
        {"event_id": str(e.event_id), "type": e.type} for e in events]}, 201)
