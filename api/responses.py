"""The error statuses a route documents, each with the one error body (api/errors.py).

Routers declare ``SECURED`` (what any keyed route can answer: no key, wrong scope, bad
parameters, throttled, database down); a route adds what its own work can raise:
``errors(404, 409)`` where the domain raises NotFound or Conflict, ``BODY`` where it takes
a JSON body (malformed, too large).
"""

from __future__ import annotations

from typing import Any

from api.schemas.common import ErrorOut

RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before trying again",
                               "schema": {"type": "integer"}}}

DESCRIPTIONS: dict[int, str] = {
    400: "The body is not UTF-8, not JSON, or nested deeper than the server parses",
    401: "No API key, or a malformed or unknown one",
    403: "The key lacks the scope this route needs",
    404: "The named thing does not exist",
    409: "The change contradicts what is stored or the thing's state",
    413: "The body (or a batch, or a payload) exceeds its size limit",
    422: "A parameter or body field is invalid; `field` names it",
    429: "Too many failed authentications from this address or for this key id",
    503: "The database is unreachable; retry later",
}

HEADERS: dict[int, dict[str, Any]] = {
    401: {"WWW-Authenticate": {"description": "Bearer", "schema": {"type": "string"}}},
    429: RETRY_AFTER,
    503: RETRY_AFTER,
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` entries documenting each status with the error body."""
    out: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        entry: dict[str, Any] = {"model": ErrorOut, "description": DESCRIPTIONS[status]}
        if status in HEADERS:
            entry["headers"] = HEADERS[status]
        out[status] = entry
    return out


SECURED = errors(401, 403, 422, 429, 503)
BODY = errors(400, 413)
