"""Lineage pages (scope ``lineage:read``, as in the API): the state as of a time, and one
dataset manifest's members with the examples its run selected."""

from __future__ import annotations

from fastapi import Request, Response

from console.deps import ContainerDep, Viewer, need
from console.render import console_router, page
from console.views.asof import as_of_page

router = console_router()
SCOPE = "lineage:read"


@router.get("/as-of")
def as_of(request: Request, session: Viewer, container: ContainerDep, at: str = "") -> Response:
    """Aliases, who answered, serving and scoring contract versions at a time (default: now)."""
    need(session, SCOPE)
    return page(request, "as_of.html", as_of_page(container, at), session)
