"""`hcp demo --stack`: the same loop against PostgreSQL, Kafka and Redis, with the server's
processes separate: `hcp serve` (the HTTP API), `hcp relay` (the log to Kafka), `hcp
evaluator` (Kafka to rewards, re-scoring history when a contract is published) and `hcp
trainer` (a Celery worker that trains and gates). The harness's answers come from the
server's ``POST /v1/chat/completions`` (``harness.endpoint``: the demo's contract
serves, its router picks each turn's specialist, the server serves the production
adapter by digest and records the exchange); the harness checks them and posts what
each answer did to ``POST /v1/events``. The operator's steps (fetching the base model,
publishing contracts, firing a generation) are what `hcp` commands would do, run from
this process. It needs HCP_DATABASE_URL (PostgreSQL), HCP_KAFKA_BOOTSTRAP and
HCP_REDIS_URL; the processes share HCP_DATA_DIR (the artifact store and the models).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from cli.demo_run import CONTRACT, DemoConfig, run_demo
from harness.endpoint import CONCURRENCY, EndpointHarness
from harness.serve import ServesTasks
from harness.sources import HttpSink
from hcp import migrate
from hcp.bootstrap import Container, bootstrap
from hcp.settings import Settings, get_settings

BIN = Path(sys.executable).parent
PROCESSES = {"serve": ["serve"], "relay": ["relay"], "evaluator": ["evaluator"],
             "trainer": ["trainer", "--pool", "solo", "--concurrency", "1"]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Stack:
    """The server's processes, started here and stopped on exit; the demo's backend."""

    def __init__(self, settings: Settings, logs: Path, config: DemoConfig) -> None:
        self.settings, self.logs, self.port = settings, logs, free_port()
        self.env = {**os.environ, "HCP_DATABASE_URL": settings.resolved_database_url,
                    "HCP_KAFKA_BOOTSTRAP": settings.kafka_bootstrap,
                    "HCP_REDIS_URL": settings.redis_url, "HCP_TOPIC_PREFIX": settings.topic_prefix,
                    "HCP_DATA_DIR": str(settings.data_dir),
                    "HCP_MODELS_DIR": str(settings.resolved_models_dir),
                    # hcp serve answers the harness under the demo's contract, in the
                    # precision the embedded demo serves in (bf16 for the real model).
                    "HCP_SERVING_CONTRACT": CONTRACT, "HCP_SERVING_DEVICE": config.device or "",
                    "HCP_SERVING_PRECISION": "fp32" if config.model == "tiny" else "bf16",
                    "HCP_SERVING_MAX_BATCH_ROWS": str(CONCURRENCY)}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.client: Any = None
        self.chat: Any = None  # the harness's client of the chat endpoint (long timeouts)

    def start(self, key: str) -> None:
        import httpx

        self.logs.mkdir(parents=True, exist_ok=True)
        for name, args in PROCESSES.items():
            extra = ["--port", str(self.port)] if name == "serve" else []
            out = (self.logs / f"{name}.log").open("wb")
            self.procs[name] = subprocess.Popen(  # noqa: S603 (our own console script)
                [str(BIN / "hcp"), *args, *extra], env=self.env, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True)
        base, auth = f"http://127.0.0.1:{self.port}", {"Authorization": f"Bearer {key}"}
        self.client = httpx.Client(base_url=base, timeout=60.0, headers=auth)
        self.chat = httpx.Client(base_url=base, timeout=900.0, headers=auth, limits=httpx.Limits(
            max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            self._alive()
            try:
                if self.client.get("/healthz").status_code < 500:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"hcp serve did not answer on port {self.port}; see {self.logs}")

    def _alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                log = (self.logs / f"{name}.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"hcp {name} exited with {proc.returncode}:\n{log}")

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        for client in (self.client, self.chat):
            if client is not None:
                client.close()

    # --- the demo's backend ------------------------------------------------------------

    def harness(self, demo: Any, base_model: str) -> ServesTasks:
        version = demo.contracts.latest_published(CONTRACT).version
        return EndpointHarness(self.chat, HttpSink(self.client), f"{CONTRACT}@{version}",
                               sandbox=demo.container.code_sandbox)

    def score(self, demo: Any, what: str) -> None:
        """Wait until the evaluator process has scored every recorded session under the
        published contract version (re-scored history included)."""
        version = demo.contracts.latest_published(CONTRACT).version
        with demo.console.status(f"{what}: waiting for `hcp evaluator`…"):
            self._wait(lambda: demo.container.rewards.count(CONTRACT, version) >= demo.answers,
                       1800, f"rewards of {CONTRACT}@{version}")

    def wait_run(self, demo: Any, run_id: str) -> None:
        self._wait(lambda: demo.container.runs.get(run_id).finished, 7200, f"training run {run_id}")

    def _wait(self, done: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            self._alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {what}; see {self.logs}")
            time.sleep(0.5)


def stack_settings() -> Settings:
    settings = get_settings()
    missing = [name for name, value in (("HCP_DATABASE_URL", settings.database_url),
                                        ("HCP_KAFKA_BOOTSTRAP", settings.kafka_bootstrap),
                                        ("HCP_REDIS_URL", settings.redis_url)) if not value]
    if missing:
        raise SystemExit(f"hcp demo --stack needs {', '.join(missing)} (PostgreSQL, Kafka, Redis)")
    return settings


def run_stack_demo(config: DemoConfig) -> int:
    """The demo against the stack; the exit status."""
    settings = stack_settings()
    migrate.upgrade(settings.resolved_database_url)
    container: Container = bootstrap(settings)
    stack = Stack(settings, settings.data_dir / "stack-logs", config)
    try:
        stack.start(container.keys.create(["admin"], f"demo-stack-{uuid.uuid4().hex[:8]}"))
        report = run_demo(container, config, backend=stack)
    finally:
        stack.stop()
        container.close()
    return 0 if report["chain_intact"] and report["generations"] else 1
