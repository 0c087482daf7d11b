"""What a small base-model file download costs the server, the model verified once.

    .venv/bin/python bench/base_downloads.py --model-dir <a model directory> [--requests 50]

In process (a SQLite database in a temporary directory, the API through FastAPI's test
client): the model directory is copied into the models directory and registered, then
``GET /v1/base-models/<name>/files/config.json`` is asked ``--requests`` times after a
first (which verifies the directory: the weights against the registry, every file hashed
for the listing). Figure: the median latency of the later requests. Ceiling: one sha256
of the model's files (``trainer.ml.digest.weights_sha256`` plus the listing), what every
request cost before (three times over). The ratio says how much of it a request still pays.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient
from load import load_average

from api.app import create_app
from hcp.bootstrap import Container
from hcp.migrate import upgrade
from hcp.settings import Settings
from kernel.db import make_engine
from trainer.ml.digest import weights_sha256
from trainer.registry.packaging import listing


def main() -> None:
    args = parse_args()
    print(load_average())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        directory = shutil.copytree(args.model_dir, root / "models" / "base")
        url = f"sqlite:///{root / 'hcp.sqlite3'}"
        upgrade(url)
        engine = make_engine(url)
        container = Container(Settings(database_url=url, kafka_bootstrap="", data_dir=root), engine)
        container.registry.register_base_model("base", directory, "bench")
        key = container.keys.create(["registry:read"], tenant="bench")
        started = time.perf_counter()
        weights_sha256(directory), listing(directory)
        hashed = time.perf_counter() - started
        with TestClient(create_app(container)) as client:
            auth = {"Authorization": f"Bearer {key}"}
            first = timed(client, auth)
            later = [timed(client, auth) for _ in range(args.requests)]
        container.close()
    size = sum(p.stat().st_size for p in Path(args.model_dir).iterdir() if p.is_file())
    median = statistics.median(later)
    print(f"model {size / 2**20:.0f} MiB; one hash of it {hashed * 1000:.0f} ms; first request "
          f"{first * 1000:.0f} ms; later requests median {median * 1000:.2f} ms (max "
          f"{max(later) * 1000:.2f}); ratio {median / hashed:.4f}; verifications "
          f"{container.downloads.hashed}")


def timed(client: TestClient, auth: dict[str, str]) -> float:
    started = time.perf_counter()
    answer = client.get("/v1/base-models/base/files/config.json", headers=auth)
    took = time.perf_counter() - started
    assert answer.status_code == 200, answer.text
    return took


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, required=True)
    parser.add_argument("--requests", type=int, default=50)
    return parser.parse_args()


if __name__ == "__main__":
    main()
