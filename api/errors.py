"""One error shape for every 4xx/5xx: {"error": {"code", "message", "field"?, "details"?}}.

Database failures are answered here too: an unreachable database is a 503 with
Retry-After (the request may succeed later), a value the database cannot hold a 422,
and anything unforeseen a JSON 500 rather than Starlette's plain text.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy import exc as sa
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from api.jsonbody import BodyRejected
from contract.document import ContractInvalid
from events.ingest import BatchRejected
from kernel.errors import Conflict, DomainError, Forbidden, Invalid, NotFound

log = logging.getLogger(__name__)
DEFAULT_RETRY_AFTER_S = 5


def error_body(code: str, message: str, field: str | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if field is not None:
        body["field"] = field
    body.update(extra)
    return {"error": _encodable(body)}


def _encodable(value: Any) -> Any:
    """``value`` with every lone surrogate in its texts written as its escape (``\\ud800``):
    a client's JSON may name a key with one, and UTF-8 cannot carry it back."""
    if isinstance(value, str):
        return value if value.isascii() else value.encode("utf-8", "backslashreplace").decode()
    if isinstance(value, dict):
        return {_encodable(k): _encodable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encodable(v) for v in value]
    return value


def invalid_field(field: str, message: str) -> Invalid:
    """A 422 naming ``field``, for checks a route makes beyond its parameter types."""
    exc = Invalid(message)
    exc.field = field
    return exc


def _field_of(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p != "body"]
    out = ""
    for part in parts:
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out or "body"


async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        return JSONResponse(error_body("malformed_json", "request body is not valid JSON", "body"), 400)
    details = [{"field": _field_of(tuple(e["loc"])), "message": e["msg"]} for e in errors]
    first = details[0]
    return JSONResponse(
        error_body("invalid_request", first["message"], first["field"], details=details), 422
    )


# The code of an error raised by status alone (a missing scope, an unknown route): the
# names the domain's errors use for the same statuses, so that one status has one code.
HTTP_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
              405: "method_not_allowed", 409: "conflict", 413: "too_large",
              415: "unsupported_media_type", 422: "invalid_request", 429: "too_many_requests",
              503: "unavailable"}


METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    code = HTTP_CODES.get(exc.status_code, "http_error")
    headers = dict(getattr(exc, "headers", None) or {})
    if exc.status_code == 405:
        headers["Allow"] = allowed_methods(request)
    return JSONResponse(error_body(code, str(exc.detail)), exc.status_code, headers=headers or None)


def allowed_methods(request: Request) -> str:
    """Every method some route serves at the request's path: FastAPI makes one route per
    method, and Starlette's own ``Allow`` names only the first route that matched. Asked
    of the router itself, method by method (its nesting is FastAPI's business)."""
    found = [method for method in METHODS if any(
        route.matches({**request.scope, "method": method})[0] == Match.FULL
        for route in request.app.router.routes)]
    return ", ".join(found)


async def _body(_: Request, exc: BodyRejected) -> JSONResponse:
    return JSONResponse(error_body(exc.code, exc.message, exc.field), exc.status_code)


async def _batch(_: Request, exc: BatchRejected) -> JSONResponse:
    return JSONResponse(error_body("invalid_event", exc.message, exc.field), exc.status)


async def _contract_invalid(_: Request, exc: Exception) -> JSONResponse:
    problems = [_problem_json(p) for p in getattr(exc, "problems", [])]
    first = problems[0] if problems else {"message": str(exc)}
    return JSONResponse(error_body("invalid_contract", str(first.get("message")),
                                   first.get("field", "document"), problems=problems), 422)


def _problem_json(problem: Any) -> dict[str, Any]:
    if hasattr(problem, "to_json"):
        return dict(problem.to_json())
    return {"message": str(problem)}


# Every package's errors derive from the kernel's families; one status each.
STATUS_OF: dict[type[DomainError], int] = {NotFound: 404, Conflict: 409, Invalid: 422,
                                           Forbidden: 403}


async def _domain(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DomainError)
    status = next(code for family, code in STATUS_OF.items() if isinstance(exc, family))
    return JSONResponse(error_body(exc.code, str(exc), exc.field), status)


def database_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says the database cannot be reached now (not that a query is wrong)."""
    if isinstance(exc, sa.OperationalError | sa.InterfaceError | sa.TimeoutError):
        return True
    return isinstance(exc, sa.DBAPIError) and exc.connection_invalidated


def unavailable_response(retry_after_s: int) -> JSONResponse:
    return JSONResponse(
        error_body("database_unavailable",
                   f"the database cannot be reached; retry in {retry_after_s} s"),
        503, headers={"Retry-After": str(retry_after_s)})


def retry_after_of(request: Request) -> int:
    container = getattr(request.app.state, "container", None)
    return container.settings.unavailable_retry_after_s if container else DEFAULT_RETRY_AFTER_S


async def _database(request: Request, exc: Exception) -> JSONResponse:
    if database_unavailable(exc):
        log.warning("database unavailable: %s", exc)
        return unavailable_response(retry_after_of(request))
    if isinstance(exc, sa.DataError):
        # Out of a column's range, or text PostgreSQL cannot hold (NUL): the client's value.
        reason = str(getattr(exc, "orig", exc)).splitlines()[0]
        return JSONResponse(error_body("unstorable_value", f"a value cannot be stored or "
                                       f"compared: {reason}"), 422)
    return await _internal(request, exc)


async def _internal(_: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error", exc_info=exc)
    return JSONResponse(error_body("internal_error", "internal server error"), 500)


# The OpenAI-compatible routes answer errors as OpenAI does, so stock clients raise the
# exception they expect (openai.BadRequestError for a 400): the status of an invalid
# request is 400, not 422, and the body adds OpenAI's ``type`` and ``param`` to ours.
OPENAI_PATHS = ("/v1/chat/completions", "/v1/models")
OPENAI_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                403: "permission_error", 404: "invalid_request_error", 409: "invalid_request_error",
                413: "invalid_request_error", 429: "rate_limit_error"}


def openai_path(path: str) -> bool:
    return path == OPENAI_PATHS[0] or path == OPENAI_PATHS[1] or path.startswith(OPENAI_PATHS[1] + "/")


def openai_shaped(response: JSONResponse) -> JSONResponse:
    """``response`` (one of ours) in OpenAI's error shape and status."""
    status = 400 if response.status_code == 422 else response.status_code
    body = json.loads(bytes(response.body))
    error = body.get("error", {})
    error["type"] = OPENAI_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    error["param"] = error.get("field")
    headers = {k: v for k, v in response.headers.items() if k.lower() not in ("content-length",
                                                                             "content-type")}
    return JSONResponse({"error": error}, status, headers=headers)


Handler = Callable[[Request, Any], Awaitable[JSONResponse]]


def _shaped_for(handler: Handler) -> Handler:
    async def shaped(request: Request, exc: Any) -> JSONResponse:
        response = await handler(request, exc)
        return openai_shaped(response) if openai_path(request.url.path) else response

    return shaped


def install_error_handlers(app: FastAPI) -> None:
    add = app.add_exception_handler
    add(RequestValidationError, _shaped_for(_validation))
    add(StarletteHTTPException, _shaped_for(_http))
    add(BodyRejected, _shaped_for(_body))
    add(sa.DBAPIError, _shaped_for(_database))
    add(sa.TimeoutError, _shaped_for(_database))
    add(Exception, _shaped_for(_internal))
    add(BatchRejected, _shaped_for(_batch))
    add(ContractInvalid, _shaped_for(_contract_invalid))
    for family in STATUS_OF:
        add(family, _shaped_for(_domain))
