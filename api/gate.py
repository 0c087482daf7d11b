"""The gate every request passes before the app reads its body (a pure ASGI middleware).

FastAPI reads and parses a body before it solves any dependency, so a key checked by a
dependency is checked after an anonymous client has had its body read and parsed. Here,
for ``/v1`` routes and ``/metrics``: a client whose failed authentications exhausted its
allowance gets 429 (``access.throttle``) unless its key is right, a request without a
known key 401, and only then is the body let through, capped at ``max_body_bytes`` (413,
without reading past the cap). The scope check (403) stays with each route's ``require`` dependency, which
sees the principal this gate found in ``request.state.principal``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import exc as sa
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from access.keys import key_id_of
from access.throttle import FailureThrottle
from api.errors import database_unavailable, error_body, unavailable_response
from api.jsonbody import BodyRejected

SECURED_PREFIX = "/v1"
KEYED_PATHS = frozenset({SECURED_PREFIX, "/metrics"})  # keyed outside /v1: the whole log's series
KEY_ID_MAX = 64  # key ids are 16 hex digits; a longer one is charged by its first 64


class BodyTooLarge(BodyRejected):
    def __init__(self, limit: int) -> None:
        super().__init__(413, "body_too_large", f"the body exceeds {limit} bytes", "body")


class RequestGate:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._throttle: FailureThrottle | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        container = getattr(scope["app"].state, "container", None) if "app" in scope else None
        if scope["type"] != "http" or container is None:
            await self.app(scope, receive, send)
            return
        settings = container.settings
        if _secured(scope["path"]):
            refused = await self._authenticate(scope, container)
            if refused is not None:
                await refused(scope, receive, send)
                return
        limit = settings.max_body_bytes
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _error(BodyTooLarge(limit))(scope, receive, send)
            return
        await self._capped(scope, receive, send, limit)

    async def _authenticate(self, scope: Scope, container: Any) -> JSONResponse | None:
        """None when the request carries a known key; else the response refusing it."""
        throttle = self._throttle_for(container.settings)
        secret = _bearer(scope)
        charged = [f"address:{_address(scope)}"]
        key_id = key_id_of(secret) if secret is not None else None
        if key_id:
            charged.append(f"key:{key_id[:KEY_ID_MAX]}")
        wait = throttle.retry_after(charged)
        try:
            # A spent allowance never refuses a secret that is right (the failures may be
            # someone else's, naming this key's id or sharing this address): past it, only
            # an issued key's secret is still checked, which costs no database but a cached
            # row; made-up ids are refused unread, as guessing must not cost the database.
            if wait and not (secret is not None and key_id
                             and await run_in_threadpool(container.keys.issued, key_id)):
                return _throttled(wait)
            if secret is None:
                return _unauthorized("missing API key: send Authorization: Bearer <key>")
            # Most requests carry a key the process has just seen: no thread hand-off then.
            principal = container.keys.authenticate_without_io(secret) or await run_in_threadpool(
                container.keys.authenticate, secret)
        except (sa.DBAPIError, sa.TimeoutError) as exc:
            if database_unavailable(exc):
                return unavailable_response(container.settings.unavailable_retry_after_s)
            raise
        if principal is None:
            throttle.failed(charged)
            return _throttled(wait) if wait else _unauthorized("unknown or malformed API key")
        scope.setdefault("state", {})["principal"] = principal
        return None

    async def _capped(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        received, started = 0, False

        async def capped_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)  # FastAPI answers it through api/errors.py
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, capped_receive, watched_send)
        except BodyTooLarge as exc:  # read outside a route (no exception handler on the way)
            if started:
                raise
            await _error(exc)(scope, receive, send)

    def _throttle_for(self, settings: Any) -> FailureThrottle:
        if self._throttle is None:
            self._throttle = FailureThrottle(settings.auth_failure_burst,
                                             settings.auth_failure_per_second)
        return self._throttle


def _secured(path: str) -> bool:
    return path in KEYED_PATHS or path.startswith(SECURED_PREFIX + "/")


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def _bearer(scope: Scope) -> str | None:
    """The credentials of ``Authorization: Bearer <key>``, as FastAPI's HTTPBearer reads them."""
    scheme, _, credentials = (_header(scope, b"authorization") or "").partition(" ")
    credentials = credentials.strip()
    if scheme.lower() != "bearer" or not credentials:
        return None
    return credentials


def _address(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def _content_length(scope: Scope) -> int | None:
    value = _header(scope, b"content-length")
    value = (value or "").strip()
    return int(value) if value.isascii() and value.isdigit() else None


def _throttled(wait: int) -> JSONResponse:
    return JSONResponse(error_body("too_many_failed_authentications",
                                   f"too many failed authentications; retry in {wait} s"),
                        429, headers={"Retry-After": str(wait)})


def _unauthorized(message: str) -> JSONResponse:
    return JSONResponse(error_body("unauthorized", message), 401,
                        headers={"WWW-Authenticate": "Bearer"})


def _error(exc: BodyRejected) -> JSONResponse:
    return JSONResponse(error_body(exc.code, exc.message, exc.field), exc.status_code)
