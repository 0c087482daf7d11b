"""A tenant's key with every read scope against every GET route: no answer names a place
on the server's disk (the data, models or artifact directories, as a path or a file URI),
whatever field or error carries it."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.chat_world import ChatWorld, chat_world, served_and_trained

pytest.importorskip("peft")
pytestmark = [pytest.mark.train]
READS = ("events:read", "rewards:read", "registry:read", "lineage:read", "contracts:read",
         "audit:read", "chat:write", "events:write")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[
        tuple[ChatWorld, Path, dict[str, str]]]:
    root = tmp_path_factory.mktemp("paths")
    with chat_world(root, sqlite_template) as found:
        auth = found.key("acme", READS)
        found.values = served_and_trained(found, root, auth)  # type: ignore[attr-defined]
        yield found, root, auth


def _filled(path: str, values: dict[str, str]) -> str | None:
    names = re.findall(r"{(\w+)(?::path)?}", path)
    if any(n not in values for n in names):
        return None
    return re.sub(r"{(\w+)(?::path)?}", lambda m: values[m.group(1)], path)


def test_no_answer_to_a_tenant_names_a_place_on_the_servers_disk(world) -> None:
    found, root, auth = world
    spec: dict[str, Any] = found.client.get("/openapi.json").json()
    asked, leaks = 0, []
    for template, item in spec["paths"].items():
        path = _filled(template, found.values)
        if "get" not in item or path is None or not path.startswith("/v1/"):
            continue
        answer = found.client.get(path, headers=auth)
        asked += 1
        text = answer.content.decode("utf-8", "replace")
        if str(root) in text or "file://" in text:
            leaks.append(f"GET {path} ({answer.status_code}): {text[:300]}")
    assert asked >= 40
    assert leaks == [], "\n".join(leaks)


def test_errors_a_tenant_meets_name_no_server_path(world) -> None:
    found, root, auth = world
    c = found.container
    base = Path(c.registry.base_model("tiny").path)
    weights = base / "model.safetensors"
    kept = weights.read_bytes()
    try:
        weights.write_bytes(kept[:-1] + bytes([kept[-1] ^ 1]))
        for path in ("/v1/base-models/tiny/files/config.json", "/v1/base-models/tiny/artifact"):
            answer = found.client.get(path, headers=auth)
            assert answer.status_code == 409 and str(root) not in answer.text, answer.text
    finally:
        weights.write_bytes(kept)
    unknown = found.client.get(f"/v1/adapters/{uuid.uuid4().hex}/files/x", headers=auth)
    assert str(root) not in unknown.text
