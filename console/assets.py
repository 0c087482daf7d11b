"""The console's static files: its own script and style sheet, and the vendored libraries
listed (with their pinned versions and sha256) in ``static/vendor/MANIFEST.json``.

Only these files are served, from the installed package, so the pages need no network.
URLs carry the first characters of each file's sha256: a new version is a new URL, and
browsers may cache every URL for good.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path

STATIC = Path(__file__).parent / "static"
OWN = ("console.css", "console.js")
MEDIA_TYPES = {".js": "text/javascript", ".css": "text/css", ".txt": "text/plain"}


@cache
def served() -> dict[str, str]:
    """Name (relative to static/) -> sha256 of every file the console serves."""
    manifest = json.loads((STATIC / "vendor" / "MANIFEST.json").read_text())
    files = {f"vendor/{entry['file']}": entry["sha256"] for entry in manifest["assets"]}
    files.update({f"vendor/{entry['licence']}": _sha256(STATIC / "vendor" / entry["licence"])
                  for entry in manifest["assets"]})
    files.update({name: _sha256(STATIC / name) for name in OWN})
    return files


def asset_url(name: str) -> str:
    """The versioned URL of a served file (templates call this as ``asset``)."""
    return f"/console/static/{name}?v={served()[name][:12]}"


def asset_path(name: str) -> Path | None:
    """The file behind a served name, or None for anything not on the list."""
    return STATIC / name if name in served() else None


def media_type(path: Path) -> str:
    return MEDIA_TYPES.get(path.suffix, "application/octet-stream")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
