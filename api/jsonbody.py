"""Strict JSON request bodies for every route: parsed once, by ``kernel.json_input``.

FastAPI parses bodies with ``json.loads``, which takes NaN, 1e400, duplicate keys and
lone surrogates, and answers a generic 400 for a body that is not UTF-8 or nests deeper
than the parser recurses. Routers built with ``route_class=StrictJsonRoute`` parse with
``parse_strict`` instead: one parse, whose result FastAPI then validates into the
route's model; what it refuses is a 400 (the body as a whole) or a 422 naming the field.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException

from kernel.json_input import JsonRejected, parse_strict


class BodyRejected(HTTPException):
    """A request body refused before validation; ``field`` says where."""

    def __init__(self, status: int, code: str, message: str, field: str) -> None:
        super().__init__(status, message)
        self.code, self.message, self.field = code, message, field


class StrictJsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            try:
                self._json = parse_strict(await self.body())
            except JsonRejected as exc:
                if exc.whole_body:
                    raise BodyRejected(400, "malformed_body", exc.message, exc.field) from None
                raise BodyRejected(422, "invalid_json_value", exc.message, exc.field) from None
        return self._json


class StrictJsonRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(StrictJsonRequest(request.scope, request.receive))

        return strict
