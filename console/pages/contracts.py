"""Contracts: versions, one version, the diff of two, a draft's dry run, re-scoring
progress, and publishing a draft (only from its dry run's result)."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import Query, Request, Response
from fastapi.responses import RedirectResponse

from console.deps import Actor, CodecDep, ContainerDep, Form, Viewer, need
from console.render import console_router, page, wants_fragment
from console.session import ConsoleSession, SessionCodec
from console.views import contracts as views
from contract.versions import DRAFT
from evaluators.dryrun import MAX_SUBJECTS
from kernel.errors import Conflict, Invalid

router = console_router()
READ, WRITE = "contracts:read", "contracts:write"


@router.get("/contracts")
def contracts(request: Request, session: Viewer, container: ContainerDep) -> Response:
    need(session, READ)
    return page(request, "contracts.html", {"names": views.index(container)}, session)


@router.get("/contracts/{name}/diff")
def diff(request: Request, name: str, a: int, b: int, session: Viewer,
         container: ContainerDep) -> Response:
    need(session, READ)
    return page(request, "contract_diff.html", views.diff_page(container, name, a, b), session)


@router.get("/contracts/{name}/{version:int}")
def version(request: Request, name: str, version: int, session: Viewer,
            container: ContainerDep, published: str | None = None) -> Response:
    need(session, READ)
    context = views.version_page(container, name, version)
    return page(request, "contract_version.html", {
        **context, "last": views.DRY_RUN_DEFAULT_LAST, "published": bool(published)}, session)


@router.get("/contracts/{name}/{version:int}/rescoring")
def rescoring(request: Request, name: str, version: int, session: Viewer,
              container: ContainerDep) -> Response:
    need(session, READ)
    jobs = views.rescoring(container, name, version, session.allows("events:read"))
    return page(request, "fragments/rescoring.html",
                {"jobs": jobs, "name": name, "number": version}, session)


@router.get("/contracts/{name}/{version:int}/dry-run")
def dry_run(request: Request, name: str, version: int, session: Viewer, container: ContainerDep,
            codec: CodecDep, baseline: Annotated[str, Query()] = "",
            last: Annotated[int, Query(ge=1, le=MAX_SUBJECTS)] = views.DRY_RUN_DEFAULT_LAST,
            ) -> Response:
    """Score the version over recent history against a baseline; writes nothing. Its
    movers and error samples come from event content: events:read too, as in the API."""
    need(session, READ)
    need(session, "events:read")
    base = int(baseline) if baseline.isdigit() else None
    result = views.dry_run(container, name, version, base, last)
    draft = result["draft"]
    can_publish = draft["status"] == DRAFT and session.allows(WRITE)
    context = {"result": result, "name": name, "number": version, "can_publish": can_publish,
               "proof": _proof(codec, session, name, version, draft["content_hash"])}
    template = "fragments/dry_run.html" if wants_fragment(request) else "contract_dry_run.html"
    return page(request, template, context, session)


@router.post("/contracts/{name}/{version:int}/publish")
def publish(name: str, version: int, session: Actor, form: Form, container: ContainerDep,
            codec: CodecDep) -> Response:
    """Publish a draft whose dry run this session was shown, for exactly this content."""
    need(session, WRITE)
    if form.get("confirm") != "yes":
        raise Invalid("confirm: tick the box to say you have read the dry run")
    draft = container.contracts.get(name, version)
    if not codec.proof_ok(session, _subject(name, version, draft.content_hash), form.get("proof")):
        raise Conflict(f"{name}@{version} has no dry run of its current content in this session; "
                       "run the dry run again and publish from its result")
    # Through the publisher, as the API does: a draft that errors on recent history above
    # the threshold is refused (the error page says why; forcing stays with the API/CLI).
    container.publisher.publish(name, version, session.actor)
    return RedirectResponse(f"/console/contracts/{quote(name)}/{version}?published=1",
                            status_code=303)


def _subject(name: str, version: int, content_hash: str) -> str:
    return f"dry-run:{name}@{version}:{content_hash}"


def _proof(codec: SessionCodec, session: ConsoleSession, name: str, version: int,
           content_hash: str) -> str:
    return codec.proof(session, _subject(name, version, content_hash))
