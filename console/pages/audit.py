"""Audit: chain status (a verification a person starts, polled while it runs), signed
checkpoints, and the audit runs the log keeps (one started here runs in the background,
its progress polled, and is stored when it ends)."""

from __future__ import annotations

import threading
from typing import Annotated
from urllib.parse import quote

from fastapi import Query, Request, Response
from fastapi.responses import RedirectResponse

from console.deps import Actor, ContainerDep, Viewer, need
from console.render import console_router, page, wants_fragment
from console.views.audit import ChainChecks, ConsoleAudits, audit_page

router = console_router()
SCOPE = "audit:read"
_lock = threading.Lock()


def _app_state(request: Request, name: str, make: type) -> object:
    """The app's one ``name`` (a check or an audit outlives the request that started it)."""
    with _lock:
        if getattr(request.app.state, name, None) is None:
            setattr(request.app.state, name, make())
    return getattr(request.app.state, name)


def chain_checks(request: Request) -> ChainChecks:
    checks = _app_state(request, "console_chain_checks", ChainChecks)
    assert isinstance(checks, ChainChecks)
    return checks


def console_audits(request: Request) -> ConsoleAudits:
    audits = _app_state(request, "console_audits", ConsoleAudits)
    assert isinstance(audits, ConsoleAudits)
    return audits


@router.get("/audit")
def audit(request: Request, session: Viewer, container: ContainerDep,
          before_run: Annotated[int | None, Query(ge=1)] = None) -> Response:
    need(session, SCOPE)
    context = audit_page(container, chain_checks(request), before_run)
    return page(request, "audit.html", {**context, "can_sign": session.allows("audit:write"),
                                        "can_export": session.allows("lineage:read")}, session)


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


@router.post("/audit/runs")
def start_audit(request: Request, session: Actor, container: ContainerDep) -> Response:
    """Start ``audit all`` in the background (or follow the one running); it is stored
    as this key's run when it ends."""
    need(session, SCOPE)
    started = console_audits(request).start(container, session.actor)
    assert started.job is not None
    if wants_fragment(request):
        return page(request, "fragments/audit_job.html", {"audit": started}, session)
    return RedirectResponse(f"/console/audit/jobs/{started.job.job_id}", status_code=303)


@router.get("/audit/jobs/{job_id}")
def audit_job(request: Request, job_id: str, session: Viewer) -> Response:
    """A console-started audit's progress (polled), then its result and stored run."""
    need(session, SCOPE)
    found = console_audits(request).get(job_id)
    template = "fragments/audit_job.html" if wants_fragment(request) else "audit_job.html"
    return page(request, template, {"audit": found}, session)


@router.get("/audit/runs/{event_id}")
def audit_run(request: Request, event_id: str, session: Viewer, container: ContainerDep) -> Response:
    """One stored audit run: who, when, from where, what each check compared, what it found."""
    need(session, SCOPE)
    return page(request, "audit_run.html", {"run": container.audit_runs.get(event_id)}, session)


@router.post("/audit/checkpoints")
def sign_checkpoint(session: Actor, container: ContainerDep) -> Response:
    """Seal the reward chain, build the tree to the log's head and sign a checkpoint now."""
    need(session, "audit:write")
    signed = container.checkpoint_signer.sign()
    assert signed is not None
    return RedirectResponse(f"/console/audit?signed={quote(str(signed.position))}#checkpoints-title",
                            status_code=303)
