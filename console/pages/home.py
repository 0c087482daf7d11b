"""Sign in with an API key (posted, never in a URL), sign out, and the overview page."""

from __future__ import annotations

from fastapi import Request, Response
from fastapi.responses import RedirectResponse

from access.keys import key_id_of
from console.deps import Actor, CodecDep, ContainerDep, Form, MaybeViewer, ThrottleDep, Viewer
from console.render import console_router, page
from console.session import COOKIE
from console.views import specialists as specialist_views

router = console_router()
HOME = "/console"


def safe_next(target: str | None) -> str:
    """Only a path of this console: never another site (an open redirect)."""
    if not target or not target.startswith(HOME) or "//" in target or "\\" in target:
        return HOME
    return target


@router.get("/sign-in")
def sign_in_form(request: Request, session: MaybeViewer, next: str | None = None) -> Response:
    return page(request, "sign_in.html", {"next": safe_next(next), "error": None}, session)


@router.post("/sign-in")
def sign_in(request: Request, form: Form, container: ContainerDep, codec: CodecDep,
            throttle: ThrottleDep) -> Response:
    key = form.get("key", "").strip()
    target = safe_next(form.get("next"))
    address = f"addr:{request.client.host if request.client else '?'}"
    wait = throttle.retry_after([address])
    key_id = key_id_of(key)
    # As at the API's gate: a spent allowance never refuses a right key (the address may be
    # shared), and made-up key ids are refused unread.
    if wait and not (key_id and container.keys.issued(key_id)):
        error = f"Too many failed sign-ins from this address; try again in {wait} s."
        return page(request, "sign_in.html", {"next": target, "error": error}, None, status=429,
                    headers={"Retry-After": str(wait)})
    principal = container.keys.authenticate(key) if key else None
    if principal is None:
        throttle.failed([address])
        error = "Enter an API key." if not key else "That key is unknown or malformed."
        if wait:
            error = f"Too many failed sign-ins from this address; try again in {wait} s."
        return page(request, "sign_in.html", {"next": target, "error": error}, None,
                    status=429 if wait else 401, headers={"Retry-After": str(wait)} if wait else None)
    if principal.tenant is not None:
        # The console shows every tenant's experience side by side (reward distributions,
        # sessions, lineage): it is for operators. A tenant's key reads its own data
        # through the API, which filters by tenant (docs/security.md).
        error = "The console is for operator keys; this key belongs to a tenant (use the API)."
        return page(request, "sign_in.html", {"next": target, "error": error}, None, status=403)
    generation = container.keys.console_generation(principal.key_id)
    cookie, _ = codec.issue(principal.key_id, principal.label, principal.scopes, None, generation)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(COOKIE, cookie, max_age=codec.ttl_seconds, path=HOME, httponly=True,
                        samesite="strict", secure=request.url.scheme == "https")
    return response


@router.post("/sign-out")
def sign_out(session: Actor, container: ContainerDep) -> Response:
    """End the key's console sessions on the server (every browser's: a copied cookie is
    refused too), then forget the cookie here."""
    container.keys.end_console_sessions(session.key_id, session.actor)
    response = RedirectResponse(f"{HOME}/sign-in", status_code=303)
    response.delete_cookie(COOKIE, path=HOME, httponly=True, samesite="strict")
    return response


@router.get("")
def overview(request: Request, session: Viewer, container: ContainerDep) -> Response:
    can = session.allows
    context = {"specialists": specialist_views.overview(container) if can("registry:read") else None,
               "head": container.store.head() if can("events:read") else None}
    return page(request, "overview.html", context, session)
