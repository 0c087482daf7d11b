"""POST /v1/events without FastAPI's request machinery, for the requests that need none of it.

Per batch, FastAPI's handler (reading and parsing the body in the event loop, solving
the key, bearer and service dependencies, validating the body through the route's
type adapter, then handing the endpoint to the thread pool) cost more CPU than the
strict parse. Almost every request is a known key with the scope (the gate found it)
sending ``application/json`` that the fast parse (``kernel.json_fast``) and the fast
body shape (``api.schemas.event_batch``) both vouch for: such a request is parsed,
validated and appended in one thread hand-off, by the same endpoint with the same
values. Every other request, and every refusal those checks cannot vouch for, goes
through FastAPI's handler exactly as before, so each 4xx (its status, order, message
and field) is FastAPI's; nothing has been stored or answered when it does. The route's
OpenAPI entry is untouched (only its handler differs).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool

from access.principal import Principal
from api.deps import EventWriting, event_writing
from api.jsonbody import StrictJsonRequest, StrictJsonRoute
from api.schemas.event_batch import ClientBatch, Declined, fast_client_batch
from kernel.json_fast import NOT_PROVEN, parse_proven

SCOPE = "events:write"
# Content types FastAPI parses as JSON, in the spellings clients send; others go its way.
_JSON_TYPES = frozenset({"application/json", "application/json; charset=utf-8",
                         "application/json;charset=utf-8", "application/json; charset=UTF-8"})
Endpoint = Callable[[ClientBatch, Principal, EventWriting], Response]


class _NotVouched(Exception):
    """The fast checks do not vouch for this request: FastAPI's handler answers it."""


class AppendRoute(StrictJsonRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        fastapi_handler = APIRoute.get_route_handler(self)
        endpoint = self.endpoint

        async def append(request: Request) -> Response:
            strict = StrictJsonRequest(request.scope, request.receive)
            answer = await _fast(strict, endpoint)
            return answer if answer is not None else await fastapi_handler(strict)

        return append


async def _fast(request: StrictJsonRequest, endpoint: Endpoint) -> Response | None:
    principal = request.scope.get("state", {}).get("principal")  # the gate's (api/gate.py)
    if not isinstance(principal, Principal) or not principal.allows(SCOPE):
        return None
    if request.headers.get("content-type") not in _JSON_TYPES:
        return None
    raw = await request.body()  # cached on the request: FastAPI's handler reads it again
    if not raw:
        return None
    writing = await event_writing(request)
    try:
        return await run_in_threadpool(_append, raw, principal, writing, endpoint)
    except _NotVouched:
        return None


def _append(raw: bytes, principal: Principal, writing: EventWriting, endpoint: Endpoint) -> Response:
    value = parse_proven(raw)
    if value is NOT_PROVEN:
        raise _NotVouched
    try:
        batch = fast_client_batch(value)
    except Declined:
        raise _NotVouched from None
    return endpoint(batch, principal, writing)
