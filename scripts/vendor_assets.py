"""Vendor the console's front-end libraries from the npm registry, pinned, and record them.

    python scripts/vendor_assets.py          # re-download, check, copy, rewrite MANIFEST.json
    python scripts/vendor_assets.py --check  # only re-hash the copies against MANIFEST.json

For each pinned package: ``npm pack NAME@VERSION`` into a temporary directory, check the
tarball against the registry's integrity (sha512), copy the one minified file the console
serves (and the licence) into console/static/vendor/, and record name, version, source
file inside the tarball, tarball integrity and the copy's sha256 in MANIFEST.json. The
console serves only these files, from the package: no CDN, the pages work offline.
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VENDOR = Path(__file__).resolve().parents[1] / "console" / "static" / "vendor"
MANIFEST = VENDOR / "MANIFEST.json"
# name, version, file in the tarball, file served, licence file in the tarball
PINNED = [
    ("htmx.org", "2.0.11", "package/dist/htmx.min.js", "htmx.min.js", "package/LICENSE"),
    ("cytoscape", "3.35.0", "package/dist/cytoscape.min.js", "cytoscape.min.js", "package/LICENSE"),
    ("chart.js", "4.6.1", "package/dist/chart.umd.min.js", "chart.umd.min.js", "package/LICENSE.md"),
]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check() -> int:
    entries = json.loads(MANIFEST.read_text())["assets"]
    bad = [e["file"] for e in entries if sha256(VENDOR / e["file"]) != e["sha256"]]
    for name in bad:
        print(f"MISMATCH {name}")
    print("ok" if not bad else f"{len(bad)} file(s) differ from MANIFEST.json")
    return 1 if bad else 0


def vendor() -> int:
    entries = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, version, source, served, licence in PINNED:
            spec = f"{name}@{version}"
            integrity = subprocess.run(["npm", "view", spec, "dist.integrity"], check=True,
                                       capture_output=True, text=True).stdout.strip()
            packed = subprocess.run(["npm", "pack", spec, "--silent"], cwd=tmp, check=True,
                                    capture_output=True, text=True).stdout.strip().splitlines()[-1]
            tarball = Path(tmp) / packed
            digest = base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
            if integrity != f"sha512-{digest}":
                raise SystemExit(f"{spec}: tarball does not match the registry's integrity")
            with tarfile.open(tarball) as archive:
                for member, target in ((source, served), (licence, f"{Path(served).stem}.LICENSE.txt")):
                    data = archive.extractfile(member)
                    assert data is not None, member
                    (VENDOR / target).write_bytes(data.read())
            entries.append({"name": name, "version": version, "source": source, "file": served,
                            "licence": f"{Path(served).stem}.LICENSE.txt",
                            "tarball_integrity": integrity, "sha256": sha256(VENDOR / served)})
            print(f"{spec}: {served} {entries[-1]['sha256'][:16]}…")
    MANIFEST.write_text(json.dumps({"registry": "https://registry.npmjs.org", "assets": entries},
                                   indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(check() if "--check" in sys.argv else vendor())
