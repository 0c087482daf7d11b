"""A ``registry:read`` key against the base model downloads: asking for its smallest file
over and over must not make the server read the whole model each time, and caching what
was verified must not let changed weights through (however they were changed)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.unit.trainer_core.fixtures import fake_model_dir


@pytest.fixture
def world(sqlite_url: str, tmp_path: Path) -> Iterator[tuple[Container, TestClient, dict[str, str], Path]]:
    container = Container(Settings(database_url=sqlite_url, kafka_bootstrap="", data_dir=tmp_path),
                          make_engine(sqlite_url))
    directory = fake_model_dir(tmp_path / "models" / "tiny")
    (directory / "model.safetensors").write_bytes(os.urandom(4 << 20))  # weights to hash
    container.registry.register_base_model("tiny", directory, "tester")
    key = container.keys.create(["registry:read"], tenant="mallory")
    with TestClient(create_app(container)) as client:
        yield container, client, {"Authorization": f"Bearer {key}"}, directory
    container.close()


def test_downloading_a_small_file_again_and_again_hashes_the_model_once(world) -> None:
    container, client, auth, _ = world
    for _ in range(20):
        answer = client.get("/v1/base-models/tiny/files/config.json", headers=auth)
        assert answer.status_code == 200, answer.text
    for path in ("/v1/base-models/tiny/files", "/v1/base-models/tiny/artifact"):
        assert client.get(path, headers=auth).status_code == 200
    assert container.downloads.hashed == 1


@pytest.mark.parametrize("change", ["append", "same size, times put back", "replace the file",
                                    "add a file"])
def test_weights_changed_after_a_download_are_refused_at_the_next(world, change: str) -> None:
    container, client, auth, directory = world
    assert client.get("/v1/base-models/tiny/files/config.json", headers=auth).status_code == 200
    weights = directory / "model.safetensors"
    times = weights.stat()
    if change == "append":
        with weights.open("ab") as handle:
            handle.write(b"\0")
    elif change == "same size, times put back":
        data = bytearray(weights.read_bytes())
        data[100] ^= 0xFF
        weights.write_bytes(bytes(data))
        os.utime(weights, ns=(times.st_atime_ns, times.st_mtime_ns))
    elif change == "replace the file":
        swapped = directory / "swap.tmp"
        swapped.write_bytes(os.urandom(times.st_size))
        os.utime(swapped, ns=(times.st_atime_ns, times.st_mtime_ns))
        swapped.replace(weights)
    else:
        (directory / "extra.bin").write_bytes(b"more weights")
    answer = client.get("/v1/base-models/tiny/files/config.json", headers=auth)
    assert answer.status_code == 409, (change, answer.text)
    assert "registered" in answer.json()["error"]["message"]
