"""The console's static files (see ``console.assets``)."""

from __future__ import annotations

from fastapi import HTTPException
from fastapi.responses import FileResponse

from console.assets import asset_path, media_type
from console.render import console_router

router = console_router()


@router.get("/static/{name:path}")
def static_file(name: str) -> FileResponse:
    path = asset_path(name)
    if path is None:
        raise HTTPException(404, f"no static file {name!r}")
    return FileResponse(path, media_type=media_type(path), headers={
        "Cache-Control": "public, max-age=31536000, immutable",
        "X-Content-Type-Options": "nosniff"})
