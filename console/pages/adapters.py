"""One adapter version's page, and its live audit result (an htmx fragment: it re-hashes)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request, Response

from console.deps import ContainerDep, Viewer, need
from console.render import console_router, page, wants_fragment
from console.views import adapter as views
from console.views import members as member_views
from console.views.lineage import DEFAULT_DEPTH, MAX_DEPTH

router = console_router()


RECORDS = ("lineage:read", "rewards:read")  # members and their scores, as the API's scopes


@router.get("/adapters/{adapter_id}")
def adapter(request: Request, adapter_id: str, session: Viewer, container: ContainerDep,
            depth: Annotated[int, Query(ge=1, le=MAX_DEPTH)] = DEFAULT_DEPTH) -> Response:
    need(session, "registry:read")
    context = views.adapter_page(container, adapter_id, depth,
                                 with_records=all(session.allows(s) for s in RECORDS))
    return page(request, "adapter.html", {**context, "can_move": session.allows("registry:write")},
                session)


@router.get("/adapters/{adapter_id}/members")
def adapter_members(request: Request, adapter_id: str, session: Viewer, container: ContainerDep,
                    split: str = "", min_score: str = "", max_score: str = "",
                    after: Annotated[int, Query(ge=0)] = 0,
                    start: Annotated[int, Query(ge=0)] = 0) -> Response:
    """The manifest's members (a page, by split and score) and the examples the run selected."""
    need(session, "registry:read")
    for scope in RECORDS:
        need(session, scope)
    where = member_views.member_filter(split, min_score, max_score)
    context = views.records(container, adapter_id, where, after, start)
    template = "fragments/members.html" if wants_fragment(request) else "adapter_members.html"
    return page(request, template, context, session)


@router.get("/adapters/{adapter_id}/audit")
def audit(request: Request, adapter_id: str, session: Viewer, container: ContainerDep,
          chain: bool = False, deep: bool = False) -> Response:
    need(session, "registry:read")
    result = views.audit_result(container, adapter_id, chain or deep, deep)
    return page(request, "fragments/adapter_audit.html", {"result": result}, session)
