"""The vendored front-end libraries are exactly the pinned files, served from the package;
no page loads anything from another host."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from console.assets import STATIC, asset_path, asset_url, served

ROOT = Path(__file__).resolve().parents[3]
MANIFEST = json.loads((STATIC / "vendor" / "MANIFEST.json").read_text())


def test_every_vendored_file_hashes_to_its_manifest_entry():
    assert {e["name"] for e in MANIFEST["assets"]} == {"htmx.org", "cytoscape", "chart.js"}
    for entry in MANIFEST["assets"]:
        data = (STATIC / "vendor" / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], entry["file"]
        assert re.fullmatch(r"\d+\.\d+\.\d+", entry["version"]) and entry["source"].startswith("package/")
        assert entry["tarball_integrity"].startswith("sha512-")
        assert (STATIC / "vendor" / entry["licence"]).exists()


def test_only_listed_files_are_served_under_versioned_urls():
    assert asset_path("vendor/htmx.min.js") is not None
    assert asset_path("../render.py") is None and asset_path("vendor/MANIFEST.json") is None
    assert asset_url("console.js").startswith("/console/static/console.js?v=")
    assert set(served()) >= {"console.css", "console.js", "vendor/chart.umd.min.js"}


def test_templates_load_nothing_from_another_host_and_run_no_inline_script():
    for template in (ROOT / "console" / "templates").rglob("*.html"):
        text = template.read_text()
        assert not re.search(r'(src|href)="(https?:)?//', text), template.name
        for script in re.findall(r"<script([^>]*)>", text):
            assert "src=" in script or 'type="application/json"' in script, (template.name, script)
        assert " on" + "click=" not in text and "hx-on" not in text, template.name


def test_the_package_data_ships_templates_and_static_files():
    pyproject = (ROOT / "pyproject.toml").read_text()
    for pattern in ("templates/*.html", "templates/fragments/*.html", "static/vendor/*.js",
                    "static/vendor/MANIFEST.json", "static/*.js", "static/*.css"):
        assert pattern in pyproject, pattern
