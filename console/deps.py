"""What the console's routes take: the container, the signed-in session, scope checks, the
posted form and its CSRF check. Nothing here builds a service: pages read the container's
services directly, as the API's routes do, never over HTTP.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from typing import Annotated, TypeVar
from urllib.parse import parse_qs

from fastapi import Depends, Request

from access.throttle import FailureThrottle
from console.session import COOKIE, ConsoleSession, SessionCodec
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.errors import Invalid

MAX_FORM_BYTES = 64 * 1024
_state_lock = threading.Lock()
T = TypeVar("T")


class NotSignedIn(Exception):
    """No valid session: the page answers with the sign-in form."""

    def __init__(self, next_path: str) -> None:
        super().__init__(next_path)
        self.next_path = next_path


class ScopeMissing(Exception):
    """The session's key lacks the scope a page or an action needs (HTTP 403)."""

    def __init__(self, scope: str) -> None:
        super().__init__(f"this key lacks the scope '{scope}'")
        self.scope = scope


class FormRejected(Exception):
    """A post without a valid CSRF token or from another origin (HTTP 403)."""


def get_container(request: Request) -> Container:
    container: Container = request.app.state.container
    return container


ContainerDep = Annotated[Container, Depends(get_container)]


def _made_once(request: Request, name: str, make: Callable[[Settings], T]) -> T:
    """The app's ``name``, made on first use from the container's settings (one per app,
    even when requests race for it)."""
    state = request.app.state
    with _state_lock:
        if getattr(state, name, None) is None:
            setattr(state, name, make(get_container(request).settings))
    made: T = getattr(state, name)
    return made


def _codec(settings: Settings) -> SessionCodec:
    # Without a configured secret, a random one: sessions end with the process.
    secret = settings.console_secret.encode() or secrets.token_bytes(32)
    return SessionCodec(secret, settings.console_session_minutes * 60)


def get_codec(request: Request) -> SessionCodec:
    """The app's session codec."""
    return _made_once(request, "console_codec", _codec)


CodecDep = Annotated[SessionCodec, Depends(get_codec)]


def get_sign_in_throttle(request: Request) -> FailureThrottle:
    """Failed sign-ins, per client address (the same allowance the API gives failed keys)."""
    return _made_once(request, "console_throttle", lambda settings: FailureThrottle(
        settings.auth_failure_burst, settings.auth_failure_per_second))


ThrottleDep = Annotated[FailureThrottle, Depends(get_sign_in_throttle)]


def current_session(request: Request, codec: CodecDep) -> ConsoleSession | None:
    """The cookie's session while its key is usable and not signed out since it was
    issued (the key's row is cached like the API's: within HCP_KEY_CACHE_SECONDS)."""
    session = codec.open(request.cookies.get(COOKIE))
    if session is None:
        return None
    keys = get_container(request).keys
    return session if keys.console_key(session.key_id, session.generation) else None


MaybeViewer = Annotated[ConsoleSession | None, Depends(current_session)]


def signed_in(request: Request, session: MaybeViewer) -> ConsoleSession:
    if session is None:
        query = f"?{request.url.query}" if request.url.query else ""
        raise NotSignedIn(request.url.path + query)
    return session


Viewer = Annotated[ConsoleSession, Depends(signed_in)]


def need(session: ConsoleSession, scope: str) -> None:
    """Raise ScopeMissing unless the session's key holds ``scope`` (or admin)."""
    if not session.allows(scope):
        raise ScopeMissing(scope)


async def posted_form(request: Request) -> dict[str, str]:
    """An urlencoded form body (first value of each field), from this origin only."""
    origin = request.headers.get("origin")
    if origin is not None and origin != f"{request.url.scheme}://{request.url.netloc}":
        raise FormRejected(f"a form posted from {origin} is refused")
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        raise Invalid("expected a form (application/x-www-form-urlencoded)")
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise Invalid(f"the form is larger than {MAX_FORM_BYTES} bytes")
    fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {name: values[0] for name, values in fields.items()}


Form = Annotated[dict[str, str], Depends(posted_form)]


def csrf_checked(session: Viewer, form: Form, codec: CodecDep) -> ConsoleSession:
    """The session of a form post whose CSRF token matches it."""
    if not codec.csrf_ok(session, form.get("csrf")):
        raise FormRejected("the form's CSRF token is missing or stale; reload the page and retry")
    return session


Actor = Annotated[ConsoleSession, Depends(csrf_checked)]
