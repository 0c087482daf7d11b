"""Audit: chain status (a verification a person starts, polled while it runs),
checkpoints and the latest audit report."""

from __future__ import annotations

import threading

from fastapi import Request, Response
from fastapi.responses import RedirectResponse

from console.deps import Actor, ContainerDep, Viewer, need
from console.render import console_router, page, wants_fragment
from console.views.audit import ChainChecks, audit_page

router = console_router()
SCOPE = "audit:read"
_lock = threading.Lock()


def chain_checks(request: Request) -> ChainChecks:
    """The app's one ChainChecks (a verification outlives the request that started it)."""
    with _lock:
        if getattr(request.app.state, "console_chain_checks", None) is None:
            request.app.state.console_chain_checks = ChainChecks()
    checks: ChainChecks = request.app.state.console_chain_checks
    return checks


@router.get("/audit")
def audit(request: Request, session: Viewer, container: ContainerDep) -> Response:
    need(session, SCOPE)
    return page(request, "audit.html", audit_page(container, chain_checks(request)), session)


@router.get("/audit/chain")
def chain_status(request: Request, session: Viewer, container: ContainerDep) -> Response:
    need(session, SCOPE)
    return page(request, "fragments/chain.html",
                {"check": chain_checks(request).latest, "head": container.store.head()}, session)


@router.post("/audit/chain")
def verify_chain(request: Request, session: Actor, container: ContainerDep) -> Response:
    """Start re-checking every event's hash (it runs on after this answer)."""
    need(session, SCOPE)
    check = chain_checks(request).start(container.store)
    if wants_fragment(request):
        return page(request, "fragments/chain.html", {"check": check, "head": check.head}, session)
    return RedirectResponse("/console/audit", status_code=303)
