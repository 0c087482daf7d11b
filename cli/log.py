"""Top-level commands of the log: serve the API (`hcp verify` is in cli/verify.py, `hcp
relay` in cli/relay.py)."""

from __future__ import annotations

import os
import secrets
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import typer

from cli.errors import UNAVAILABLE

if TYPE_CHECKING:
    from hcp.bootstrap import Container


def serve(host: str = typer.Option(None), port: int = typer.Option(None),
          workers: int = typer.Option(None, "--workers", min=1,
                                      help="API processes sharing the port (default "
                                           "HCP_API_WORKERS, 1); see docs/scaling.md"),
          access_log: bool = typer.Option(True, "--access-log/--no-access-log",
                                          help="Log a line per request (costs CPU under load)"),
          run_workers: bool = typer.Option(
              None, "--run-workers/--no-run-workers",
              help="Run the evaluator and the trigger loop in this process (default: in "
                   "embedded mode, i.e. no Kafka and no Redis configured; turn off when "
                   "`hcp evaluator` and `hcp triggers run` run as processes of their own)"),
          trigger_interval: float = typer.Option(30.0, min=1.0, help="Seconds between the "
                                                 "in-process trigger loop's evaluations"),
          ) -> None:
    """Run the HTTP API (refuses to start on a schema that is not at head)."""
    from cli.common import check_port
    from hcp.background import InProcessWorkers
    from hcp.bootstrap import bootstrap
    from hcp.settings import get_settings

    settings = get_settings()
    host, port = host or settings.api_host, port or settings.api_port
    check_port(host, port)
    container = bootstrap(settings)  # checks the schema once, before any worker starts
    workers = workers or settings.api_workers
    if run_workers is None:
        run_workers = settings.embedded and not settings.redis_url
    background = InProcessWorkers(container, trigger_interval) if run_workers else None
    if background is not None:
        typer.echo("running the evaluator and the trigger loop in this process "
                   "(--no-run-workers when they run on their own)", err=True)
        background.start()
    # uvicorn stops on SIGTERM, then raises it again: with the default handler that would
    # end the process before the evaluator stores its last batch; a clean stop exits 0.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        _serve(container, host, port, workers, access_log)
    finally:
        if background is not None:
            background.close()
        container.close()


def _serve(container: Container, host: str, port: int, workers: int, access_log: bool) -> None:
    import uvicorn

    from api.app import create_app

    if workers == 1:
        with _startup_failure_unavailable():
            uvicorn.run(create_app(container, served=True), host=host, port=port,
                        log_level="info", access_log=access_log)
        return
    settings = container.settings
    _warn_if_cores_are_few(workers)
    if not settings.console_secret:
        # One process signs console sessions with a random key of its own; the workers
        # must share one, or a session signed by one would be refused by the others. They
        # are started from this process and read their settings from its environment.
        os.environ["HCP_CONSOLE_SECRET"] = secrets.token_hex(32)
        typer.echo("note: HCP_CONSOLE_SECRET is empty: the API processes sign console sessions "
                   "with a key made for this run (sessions end when it stops)", err=True)
    # Each worker process builds its own container (pools, group commit) in the lifespan;
    # they share the port (SO_REUSEPORT-style via uvicorn's supervisor) and the database,
    # whose advisory lock keeps the log's positions gapless across processes.
    with _startup_failure_unavailable():
        uvicorn.run("api.app:create_served_app", factory=True, host=host, port=port,
                    workers=workers, log_level="info", access_log=access_log)


@contextmanager
def _startup_failure_unavailable() -> Iterator[None]:
    """uvicorn exits 3 when the server cannot start (the port taken after the check, the
    app's start-up failing): here 3 means "not found", so that leaves as status 5."""
    try:
        yield
    except SystemExit as exc:
        raise SystemExit(UNAVAILABLE if exc.code == 3 else exc.code) from None


def _warn_if_cores_are_few(workers: int) -> None:
    """More API processes than cores only compete: each groups only its own requests into
    a commit, and their commits queue on the log's writer lock. Up to one per core they
    help (on 2 cores, 2 processes posted 1.25-1.46x one's events/s: docs/scaling.md)."""
    cores = os.cpu_count() or 1
    if workers > cores:
        typer.echo(f"warning: {workers} API processes on {cores} cores: they compete with each "
                   "other and the database for the cores, and each groups only its own requests "
                   "into a commit, so more than one per core may be slower, not faster; measure "
                   "with bench/ingest.py --only http (docs/scaling.md)", err=True)


def register(app: typer.Typer) -> None:
    from cli import relay, verify

    app.command()(serve)
    verify.register(app)
    relay.register(app)
