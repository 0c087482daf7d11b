"""The interactive API docs, /docs (Swagger UI) and /redoc (ReDoc), from files in the package.

FastAPI's own docs pages load Swagger UI and ReDoc from a CDN, so without internet they
are blank. Here the pages are FastAPI's (``get_swagger_ui_html``, ``get_redoc_html``)
pointed at the copies in ``static/``, pinned and hashed in ``static/MANIFEST.json``
(``scripts/vendor_assets.py`` writes both; a unit test re-hashes them). Only the files
listed there are served, under URLs that carry the start of their sha256.

Each page carries a Content-Security-Policy: scripts only from this server plus the one
inline script FastAPI writes (allowed by its hash, computed from the page itself), no
other host for anything. ReDoc builds its styles at run time (styled-components) and
its search index in a worker made from a ``blob:`` URL, so its page allows those two.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from functools import cache
from pathlib import Path

from fastapi import APIRouter, HTTPException, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

STATIC = Path(__file__).parent / "static"
STATIC_URL = "/docs/static"
MEDIA_TYPES = {".js": "text/javascript", ".css": "text/css", ".png": "image/png", ".txt": "text/plain"}
# Swagger UI's options: no online validator badge (it would fetch from validator.swagger.io).
SWAGGER_PARAMETERS = {"validatorUrl": None}

router = APIRouter(include_in_schema=False)


@cache
def served() -> dict[str, str]:
    """Name -> sha256 of every file these pages serve: the vendored files and their licences."""
    entries = json.loads((STATIC / "MANIFEST.json").read_text())["assets"]
    files = {entry["file"]: entry["sha256"] for entry in entries}
    for name in {n for entry in entries for n in (entry["licence"], *entry.get("notices", ()))}:
        files[name] = hashlib.sha256((STATIC / name).read_bytes()).hexdigest()
    return files


def asset_url(name: str) -> str:
    return f"{STATIC_URL}/{name}?v={served()[name][:12]}"


@router.get("/docs")
def swagger_ui(request: Request) -> HTMLResponse:
    page = get_swagger_ui_html(
        openapi_url=str(request.app.openapi_url), title=f"{request.app.title} - Swagger UI",
        swagger_js_url=asset_url("swagger-ui-bundle.js"), swagger_css_url=asset_url("swagger-ui.css"),
        swagger_favicon_url=asset_url("favicon-32x32.png"), swagger_ui_parameters=SWAGGER_PARAMETERS)
    return _with_policy(page, styles="'self'", workers="'none'")


@router.get("/redoc")
def redoc(request: Request) -> HTMLResponse:
    page = get_redoc_html(
        openapi_url=str(request.app.openapi_url), title=f"{request.app.title} - ReDoc",
        redoc_js_url=asset_url("redoc.standalone.js"), redoc_favicon_url=asset_url("favicon-32x32.png"),
        with_google_fonts=False)
    return _with_policy(page, styles="'self' 'unsafe-inline'", workers="blob:")


@router.get(STATIC_URL + "/{name}")
def static_file(name: str) -> FileResponse:
    if name not in served():
        raise HTTPException(404, f"no docs file {name!r}")
    path = STATIC / name
    return FileResponse(path, media_type=MEDIA_TYPES.get(path.suffix, "application/octet-stream"),
                        headers={"Cache-Control": "public, max-age=31536000, immutable",
                                 "X-Content-Type-Options": "nosniff"})


def _with_policy(page: HTMLResponse, styles: str, workers: str) -> HTMLResponse:
    html = bytes(page.body).decode()
    scripts = " ".join(f"'sha256-{_digest(s)}'" for s in _INLINE_SCRIPT.findall(html))
    page.headers["Content-Security-Policy"] = (
        f"default-src 'self'; script-src 'self' {scripts}; style-src {styles}; "
        f"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src {workers}; "
        "frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'")
    page.headers["X-Content-Type-Options"] = "nosniff"
    return page


_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)


def _digest(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
