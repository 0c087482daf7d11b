"""Vendor the front-end libraries the server serves from the npm registry, pinned, and record them.

    python scripts/vendor_assets.py          # re-download, check, copy, rewrite each MANIFEST.json
    python scripts/vendor_assets.py --check  # only re-hash the copies against each MANIFEST.json

Two places are vendored: the console's libraries (console/static/vendor/) and the
interactive API docs, Swagger UI and ReDoc (api/static/). For each pinned package:
``npm pack NAME@VERSION`` into a temporary directory, check the tarball against the
registry's integrity (sha512), copy the files served (and the licences) into the place,
and record per served file its name, version, source file inside the tarball, tarball
integrity and the copy's sha256 in that place's MANIFEST.json. Only these files are
served, from the package: no CDN, the pages work offline.
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    files: tuple[tuple[str, str], ...]  # (file in the tarball, file served)
    # (file in the tarball, copy); the first is the package's licence, the rest notices
    licences: tuple[tuple[str, str], ...]


PLACES: dict[Path, tuple[Pin, ...]] = {
    ROOT / "console" / "static" / "vendor": (
        Pin("htmx.org", "2.0.11", (("package/dist/htmx.min.js", "htmx.min.js"),),
            (("package/LICENSE", "htmx.min.LICENSE.txt"),)),
        Pin("cytoscape", "3.35.0", (("package/dist/cytoscape.min.js", "cytoscape.min.js"),),
            (("package/LICENSE", "cytoscape.min.LICENSE.txt"),)),
        Pin("chart.js", "4.6.1", (("package/dist/chart.umd.min.js", "chart.umd.min.js"),),
            (("package/LICENSE.md", "chart.umd.min.LICENSE.txt"),)),
    ),
    # ReDoc stays on 2.x, the major FastAPI's get_redoc_html is written for: 3.x ships
    # its standalone bundle as an ES module only.
    ROOT / "api" / "static": (
        Pin("swagger-ui-dist", "5.35.0",
            (("package/swagger-ui-bundle.js", "swagger-ui-bundle.js"),
             ("package/swagger-ui.css", "swagger-ui.css"),
             ("package/favicon-32x32.png", "favicon-32x32.png")),
            (("package/LICENSE", "swagger-ui.LICENSE.txt"),
             ("package/NOTICE", "swagger-ui.NOTICE.txt"),
             ("package/swagger-ui-bundle.js.LICENSE.txt", "swagger-ui-bundle.js.LICENSE.txt"))),
        Pin("redoc", "2.5.4", (("package/bundles/redoc.standalone.js", "redoc.standalone.js"),),
            (("package/LICENSE", "redoc.LICENSE.txt"),
             ("package/bundles/redoc.standalone.js.LICENSE.txt", "redoc.standalone.js.LICENSE.txt"))),
    ),
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check() -> int:
    bad = []
    for place in PLACES:
        for entry in json.loads((place / "MANIFEST.json").read_text())["assets"]:
            if sha256(place / entry["file"]) != entry["sha256"]:
                bad.append(f"{place.relative_to(ROOT)}/{entry['file']}")
    for name in bad:
        print(f"MISMATCH {name}")
    print("ok" if not bad else f"{len(bad)} file(s) differ from their MANIFEST.json")
    return 1 if bad else 0


def vendor() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        for place, pins in PLACES.items():
            entries = [entry for pin in pins for entry in _vendor(pin, place, Path(tmp))]
            (place / "MANIFEST.json").write_text(json.dumps(
                {"registry": "https://registry.npmjs.org", "assets": entries}, indent=2) + "\n")
    return 0


def _vendor(pin: Pin, place: Path, tmp: Path) -> list[dict[str, object]]:
    spec = f"{pin.name}@{pin.version}"
    integrity = subprocess.run(["npm", "view", spec, "dist.integrity"], check=True,
                               capture_output=True, text=True).stdout.strip()
    packed = subprocess.run(["npm", "pack", spec, "--silent"], cwd=tmp, check=True,
                            capture_output=True, text=True).stdout.strip().splitlines()[-1]
    tarball = tmp / packed
    digest = base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
    if integrity != f"sha512-{digest}":
        raise SystemExit(f"{spec}: tarball does not match the registry's integrity")
    with tarfile.open(tarball) as archive:
        for member, target in (*pin.files, *pin.licences):
            data = archive.extractfile(member)
            assert data is not None, member
            (place / target).write_bytes(data.read())
    licence, *notices = [copy for _, copy in pin.licences]
    entries: list[dict[str, object]] = []
    for source, served in pin.files:
        entry: dict[str, object] = {"name": pin.name, "version": pin.version, "source": source,
                                    "file": served, "licence": licence}
        if notices:
            entry["notices"] = notices
        entry.update(tarball_integrity=integrity, sha256=sha256(place / served))
        entries.append(entry)
        print(f"{spec}: {served} {sha256(place / served)[:16]}…")
    return entries


if __name__ == "__main__":
    sys.exit(check() if "--check" in sys.argv else vendor())
