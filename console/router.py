"""The console's one router, which ``api.app`` mounts: every page module, the static
files, and the addresses people type (/, /ui, /dashboard) sent to the console."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import RedirectResponse

from console.pages import (
    adapters,
    audit,
    audit_files,
    contracts,
    home,
    lineage,
    rewards,
    sessions,
    specialists,
    static,
)

router = APIRouter(include_in_schema=False)
for module in (home, specialists, adapters, lineage, contracts, rewards, sessions, audit, audit_files,
               static):
    router.include_router(module.router)


def _to_console() -> RedirectResponse:
    return RedirectResponse("/console", status_code=307)


for path in ("/", "/ui", "/dashboard"):
    router.add_api_route(path, _to_console, methods=["GET"], include_in_schema=False)
