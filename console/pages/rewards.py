"""Rewards: filter, see distributions and means (two series side by side), list records."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request, Response

from console.deps import ContainerDep, Viewer, need
from console.render import console_router, page
from console.views import rewards as views

router = console_router()


@router.get("/rewards")
def rewards(request: Request, session: Viewer, container: ContainerDep,
            specialist: str = "", adapter: str = "", contract: str = "", criterion: str = "",
            since: str = "", until: str = "", compare: str = "", a: str = "", b: str = "",
            sample: Annotated[int, Query(ge=1, le=views.MAX_SAMPLE)] = views.DEFAULT_SAMPLE,
            before: Annotated[int | None, Query(ge=1)] = None) -> Response:
    need(session, "rewards:read")
    params = views.RewardParams(specialist.strip(), adapter.strip(), contract.strip(),
                                criterion.strip(), since.strip(), until.strip(), compare.strip(),
                                a.strip(), b.strip(), sample, before)
    return page(request, "rewards.html", views.rewards_page(container, params), session)
