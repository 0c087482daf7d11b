"""The API docs' Swagger UI and ReDoc are exactly the pinned files, served from the package,
and their pages load nothing from another host (the browser test, tests/e2e/test_docs_browser.py,
opens them with the network cut)."""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import re
import tomllib
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.docs_ui import STATIC, served

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = json.loads((STATIC / "MANIFEST.json").read_text())


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app())  # not entered: no lifespan, no database needed


def test_every_vendored_file_hashes_to_its_manifest_entry() -> None:
    assert {e["name"] for e in MANIFEST["assets"]} == {"swagger-ui-dist", "redoc"}
    for entry in MANIFEST["assets"]:
        data = (STATIC / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], entry["file"]
        assert re.fullmatch(r"\d+\.\d+\.\d+", entry["version"]) and entry["source"].startswith("package/")
        assert entry["tarball_integrity"].startswith("sha512-")
        for licence in (entry["licence"], *entry.get("notices", ())):
            assert (STATIC / licence).stat().st_size > 0, licence


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
def test_the_docs_pages_load_only_files_of_this_server_under_a_policy(client: TestClient, path: str) -> None:
    page = client.get(path)

    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    urls = re.findall(r'(?:src|href|url:\s*|spec-url=)["\']([^"\']+)', page.text)
    assert urls and all(u.startswith("/") and not u.startswith("//") for u in urls), urls
    policy = page.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "connect-src 'self'" in policy
    assert "unsafe-eval" not in policy and "script-src 'self'" in policy
    assert "'unsafe-inline'" not in policy.split("script-src", 1)[1].split(";")[0]


def test_the_inline_script_of_swagger_ui_is_allowed_by_its_hash_alone(client: TestClient) -> None:
    page = client.get("/docs")
    [inline] = re.findall(r"<script>(.*?)</script>", page.text, re.S)
    digest = base64.b64encode(hashlib.sha256(inline.encode()).digest()).decode()
    assert f"'sha256-{digest}'" in page.headers["content-security-policy"]
    assert "SwaggerUIBundle" in inline and "/openapi.json" in inline


def test_only_listed_files_are_served_and_for_good(client: TestClient) -> None:
    assert set(served()) >= {"swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js",
                             "redoc.LICENSE.txt", "swagger-ui.LICENSE.txt"}
    bundle = client.get("/docs/static/swagger-ui-bundle.js")
    assert bundle.status_code == 200 and bundle.headers["content-type"].startswith("text/javascript")
    assert hashlib.sha256(bundle.content).hexdigest() == served()["swagger-ui-bundle.js"]
    assert "immutable" in bundle.headers["cache-control"]
    for name in ("MANIFEST.json", "..%2Fapp.py", "swagger-ui-bundle.js.map", "index.html"):
        assert client.get(f"/docs/static/{name}").status_code == 404, name


def test_the_package_data_ships_every_served_file() -> None:
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for name in (*served(), "MANIFEST.json"):
        assert any(fnmatch.fnmatch(f"static/{name}", p) for p in patterns.get("api", [])), name
