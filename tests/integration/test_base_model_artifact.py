"""GET /v1/base-models/{name}/artifact and …/files: the registered directory, re-hashed,
downloaded and verified with hcp_client; altered weights are refused (409)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hcp_client import Client

from api.app import create_app
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.served_app import serve
from tests.unit.trainer_core.fixtures import fake_model_dir
from trainer.ml.digest import weights_sha256


@pytest.fixture
def container(database_url: str, tmp_path: Path) -> Iterator[Container]:
    c = Container(Settings(database_url=database_url, kafka_bootstrap="", data_dir=tmp_path),
                  make_engine(database_url))
    yield c
    c.close()


def test_a_host_with_only_the_api_gets_the_base_and_can_check_it(container: Container,
                                                                  tmp_path: Path) -> None:
    directory = fake_model_dir(tmp_path / "models" / "tiny")
    (directory / "tokenizer").mkdir()
    (directory / "tokenizer" / "vocab.txt").write_text("a\nb\n")
    entry = container.registry.register_base_model("tiny", directory, "tester")
    key = container.keys.create(["registry:read"], label=f"r-{uuid.uuid4().hex[:6]}")
    with serve(create_app(container)) as base, Client(base, key) as hcp:
        unpacked = hcp.download_base_model("tiny", tmp_path / "elsewhere")
        assert unpacked == tmp_path / "elsewhere" / "tiny"  # the name adapters refer to
        assert weights_sha256(unpacked) == entry.weights_sha256
        assert (unpacked / "tokenizer" / "vocab.txt").read_text() == "a\nb\n"
    with TestClient(create_app(container)) as client:
        headers = {"Authorization": f"Bearer {key}"}
        tar = client.get("/v1/base-models/tiny/artifact", headers=headers)
        assert tar.status_code == 200 and tar.headers["x-weights-sha256"] == entry.weights_sha256
        listing = client.get("/v1/base-models/tiny/files", headers=headers).json()
        assert tar.headers["x-artifact-sha256"] == listing["artifact_sha256"]
        assert sorted(f["path"] for f in listing["files"]) == ["config.json", "model.safetensors",
                                                               "tokenizer/vocab.txt"]
        (directory / "model.safetensors").write_bytes(b"swapped")
        altered = client.get("/v1/base-models/tiny/artifact", headers=headers)
        assert altered.status_code == 409 and "registered" in altered.json()["error"]["message"]
        assert client.get("/v1/base-models/nope/artifact", headers=headers).status_code == 404
