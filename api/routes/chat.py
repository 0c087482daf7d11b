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
from api.errors import error_body
from api.jsonbody import StrictJsonRoute
from api.responses import BODY, SECURED, errors
from serving.exchange import Exchange, Outcome
from serving.feedback import FeedbackIn, feedback_events, session_id_of
from serving.gateway import ChatGateway, RecordingFailed, Unavailable
from serving.openai_shapes import ChatRequest, chunk_json, completion_json, usage_chunk_json
from serving.sessions import SessionNotFound

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


def served_headers(exchange: Exchange) -> dict[str, str]:
    """What served, for a client that reads headers (also in the body's ``hcp`` object)."""
    c = exchange.choice
    return {"X-HCP-Session": str(exchange.session.session_id), "X-HCP-Specialist": c.specialist,
            "X-HCP-Adapter-Version": c.adapter_version, "X-HCP-Adapter-Digest": c.digest or "none",
            "X-HCP-Served-Base": "true" if c.served_base else "false",
            "X-HCP-Contract": c.config.ref, "X-HCP-Route": c.strategy,
            **({"X-HCP-Record-Ms": f"{exchange.record_ms:.3f}"} if exchange.record_ms is not None else {})}


def hcp_extra(exchange: Exchange) -> dict[str, Any]:
    c = exchange.choice
    return {"session": str(exchange.session.session_id), "specialist": c.specialist,
            "adapter_version": c.adapter_version, "adapter_digest": c.digest,
            "served_base": c.served_base, "contract": c.config.ref, "strategy": c.strategy,
            "scores": c.route.scores, "fallback": c.route.fallback, "notes": c.notes}


def unavailable(exc: Unavailable) -> JSONResponse:
    return JSONResponse(error_body(exc.code, str(exc)), 503, headers={"Retry-After": "5"})


@router.post("/chat/completions", response_model=ChatCompletionOut, responses={
    200: {"content": {"text/event-stream": {"schema": {"type": "string"}}},
          "description": "The answer; with stream: true, server-sent chunk events"},
    **BODY, **errors(404, 503)})
async def chat_completions(body: Annotated[ChatRequest, Body()], principal: ChatWrite,
                           container: ContainerDep, session: SessionHeader = None) -> Response:
    """An answer from the specialist the model names (or the router picks, for ``auto``),
    recorded in the key's tenant; ``stream: true`` answers with server-sent events."""
    gateway: ChatGateway = await run_in_threadpool(lambda: container.chat)
    author = principal.author
    if not body.stream:
        try:
            exchange, outcome = await run_in_threadpool(gateway.complete, body, author, session)
        except Unavailable as exc:
            return unavailable(exc)
        calls = [outcome.tool_call.openai()] if outcome.tool_call else []
        content = None if outcome.tool_call else outcome.text
        return Response(orjson.dumps(completion_json(
            exchange.completion_id, exchange.choice.adapter_version, content, calls, outcome.finish,
            outcome.prompt_tokens, outcome.completion_tokens, hcp_extra(exchange))),
            media_type="application/json", headers=served_headers(exchange))
    exchange = await run_in_threadpool(gateway.prepare, body, author, session)
    try:
        await run_in_threadpool(gateway.record, exchange.opening(), author)
    except RecordingFailed as exc:
        return unavailable(exc)
    return StreamingResponse(_stream(gateway, exchange, principal), media_type="text/event-stream",
                             headers={**served_headers(exchange), "Cache-Control": "no-cache"})


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
        await run_in_threadpool(gateway.record, exchange.closing(outcome), principal.author)
    except Exception as exc:  # noqa: BLE001 (the stream is open: the error is its last event)
        code = exc.code if isinstance(exc, Unavailable) else "internal_error"
        yield _sse(error_body(code, str(exc)[:300]))
        return
    if outcome.tool_call is not None:
        delta = {"tool_calls": [{"index": 0, **outcome.tool_call.openai()}]}
        yield _sse(chunk_json(cid, model, created, delta, None, digest))
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


@router.post("/feedback", status_code=201, response_model=FeedbackOut,
             responses={**BODY, **errors(404, 503)})
def feedback(body: FeedbackIn, principal: ChatWrite, container: ContainerDep) -> Response:
    """Rate or correct an answer (``completion_id``; default the session's latest) and,
    with ``end``, end the episode: recorded in the answer's session."""
    gateway = container.chat
    state = gateway.sessions.read(session_id_of(body), principal.tenant)
    if not state.events:
        raise SessionNotFound(f"no session {body.session} in this key's tenant")
    events = feedback_events(state, body)
    try:
        gateway.record(events, principal.author)
    except Unavailable as exc:
        return unavailable(exc)
    return JSONResponse({"session": body.session, "recorded": [
        {"event_id": str(e.event_id), "type": e.type} for e in events]}, 201)
