"""One adapter version's page, and its live audit result (an htmx fragment: it re-hashes)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request, Response

from console.deps import ContainerDep, Viewer, need
from console.render import console_router, page
from console.views import adapter as views
from console.views.lineage import DEFAULT_DEPTH, MAX_DEPTH

router = console_router()


@router.get("/adapters/{adapter_id}")
def adapter(request: Request, adapter_id: str, session: Viewer, container: ContainerDep,
            depth: Annotated[int, Query(ge=1, le=MAX_DEPTH)] = DEFAULT_DEPTH) -> Response:
    need(session, "registry:read")
    context = views.adapter_page(container, adapter_id, depth)
    return page(request, "adapter.html", {**context, "can_move": session.allows("registry:write")},
                session)


@router.get("/adapters/{adapter_id}/audit")
def audit(request: Request, adapter_id: str, session: Viewer, container: ContainerDep,
          chain: bool = False, deep: bool = False) -> Response:
    need(session, "registry:read")
    result = views.audit_result(container, adapter_id, chain or deep, deep)
    return page(request, "fragments/adapter_audit.html", {"result": result}, session)
