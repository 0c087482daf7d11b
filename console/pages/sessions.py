"""Sessions: the latest ones, and one session's turns with the rewards it produced."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import Query, Request, Response
from fastapi.responses import RedirectResponse

import console.convertors  # noqa: F401 (registers {…:rest})
from console.deps import ContainerDep, Viewer, need
from console.render import console_router, page
from console.views import sessions as views

router = console_router()


@router.get("/sessions")
def sessions(request: Request, session: Viewer, container: ContainerDep,
             before: Annotated[int | None, Query(ge=1)] = None, stream: str = "",
             tenant: str = "", specialist: str = "", adapter: str = "", outcome: str = "") -> Response:
    """The latest sessions, filtered by tenant, specialist, adapter version and outcome."""
    need(session, "events:read")
    if stream.strip():
        return RedirectResponse(f"/console/sessions/{quote(stream.strip(), safe='')}", status_code=303)
    where = views.session_filter(tenant, specialist, adapter, outcome)
    return page(request, "sessions.html", views.latest_sessions(container, before, where), session)


# ``:rest`` (console/convertors.py): a stream id may hold "/" (an OTLP conversation id is
# the client's, and a "%2F" in a link is decoded before routing): the rest of the path is it.
@router.get("/sessions/{stream_id:rest}")
def one_session(request: Request, stream_id: str, session: Viewer, container: ContainerDep,
                after_seq: Annotated[int, Query(ge=0)] = 0) -> Response:
    need(session, "events:read")
    context = views.session_page(container, stream_id, after_seq,
                                 with_rewards=session.allows("rewards:read"),
                                 with_downstream=session.allows("lineage:read"))
    return page(request, "session.html", context, session)
