"""Rendering: the Jinja2 templates, their filters, the security headers every page carries,
and the route class that turns errors into pages (not the API's JSON bodies)."""

from __future__ import annotations

import math
from collections.abc import Callable, Coroutine, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from fastapi.routing import APIRoute
from fastapi.templating import Jinja2Templates

from console.assets import asset_url
from console.deps import FormRejected, NotSignedIn, ScopeMissing, current_session, get_codec
from console.session import ConsoleSession
from console.views.gate import interval_text
from kernel.clock import utc
from kernel.errors import Conflict, DomainError, Invalid, NotFound

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=HERE / "templates")

# (label, path, scope that shows it)
NAV = (("Specialists", "/console/specialists", "registry:read"),
       ("Contracts", "/console/contracts", "contracts:read"),
       ("Rewards", "/console/rewards", "rewards:read"),
       ("Sessions", "/console/sessions", "events:read"),
       ("As of", "/console/as-of", "lineage:read"),
       ("Audit", "/console/audit", "audit:read"))

# Scripts and styles only from this server (the vendored libraries included): no inline
# script, no CDN. Page data travels in <script type="application/json"> blocks.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
                               "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; "
                               "base-uri 'none'; form-action 'self'; object-src 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # no-referrer would also blank the Origin of our own posts
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


def _short(value: Any, length: int = 12) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= length else text[:length] + "…"


def _when(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return value
    return str(utc(value).strftime("%Y-%m-%d %H:%M:%S UTC"))


def _num(value: Any, digits: int = 3) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "–"
    if isinstance(value, float) and not math.isfinite(value):
        return "–"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _signed(value: Any, digits: int = 3) -> str:
    text = _num(value, digits)
    return f"+{text}" if text != "–" and float(value) > 0 else text


templates.env.filters.update(short=_short, when=_when, num=_num, signed=_signed, interval=interval_text)
templates.env.globals.update(asset=asset_url)


def page(request: Request, template: str, context: Mapping[str, Any],
         session: ConsoleSession | None, status: int = 200,
         headers: Mapping[str, str] | None = None) -> Response:
    """A rendered page (or htmx fragment) with the security headers."""
    csrf = get_codec(request).csrf_token(session) if session else ""
    nav = [(label, path) for label, path, scope in NAV if session and session.allows(scope)]
    full = {"session": session, "csrf": csrf, "nav": nav, "path": request.url.path, **context}
    return templates.TemplateResponse(request, template, full, status_code=status,
                                      headers={**SECURITY_HEADERS, **(headers or {})})


def error_page(request: Request, status: int, title: str, message: str) -> Response:
    session = current_session(request, get_codec(request))
    template = "fragments/error.html" if request.headers.get("hx-request") else "error.html"
    return page(request, template, {"title": title, "message": message, "status": status},
                session, status)


_FAMILIES: tuple[tuple[type[DomainError], int, str], ...] = (
    (NotFound, 404, "Not found"), (Conflict, 409, "Conflict"), (Invalid, 422, "Cannot do that"))


class ConsoleRoute(APIRoute):
    """Answers errors as pages: sign-in redirects, 403 for a missing scope, 404/409/422."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handler(request: Request) -> Response:
            try:
                return await handle(request)
            except NotSignedIn as exc:
                target = f"/console/sign-in?next={quote(exc.next_path, safe='')}"
                if request.headers.get("hx-request"):
                    return Response(status_code=401, headers={"HX-Redirect": target})
                return RedirectResponse(target, status_code=303)
            except (ScopeMissing, FormRejected) as exc:
                return error_page(request, 403, "Not allowed", str(exc))
            except DomainError as exc:
                status, title = next(((s, t) for family, s, t in _FAMILIES if isinstance(exc, family)),
                                     (400, "Cannot do that"))
                return error_page(request, status, title, str(exc))
            except RequestValidationError as exc:
                problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'][1:])}: {e['msg']}"
                                     for e in exc.errors())
                return error_page(request, 422, "Cannot read the request", problems)
            except HTTPException as exc:
                return error_page(request, exc.status_code, "Error", str(exc.detail))

        return handler


def console_router() -> APIRouter:
    """A router of console pages: under /console, errors as pages, not in the OpenAPI."""
    return APIRouter(prefix="/console", route_class=ConsoleRoute, include_in_schema=False)


def wants_fragment(request: Request) -> bool:
    """An htmx request swaps part of a page; anything else gets the whole page."""
    return request.headers.get("hx-request") == "true"
