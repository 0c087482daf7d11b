"""Top-level commands of the log: serve the API, verify the chain, run the relay."""

from __future__ import annotations

import os
import secrets
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import typer
from rich.progress import Progress

from events.chain import VerifyReport, verify_chain
from events.model import RecordedEvent
from hcp.bootstrap import Container, bootstrap
from hcp.settings import get_settings


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
    from hcp.background import InProcessWorkers

    settings = get_settings()
    container = bootstrap(settings)  # checks the schema once, before any worker starts
    workers = workers or settings.api_workers
    host, port = host or settings.api_host, port or settings.api_port
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
        uvicorn.run(create_app(container, served=True), host=host, port=port, log_level="info",
                    access_log=access_log)
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
    uvicorn.run("api.app:create_served_app", factory=True, host=host, port=port, workers=workers,
                log_level="info", access_log=access_log)


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


def verify(
    checkpoint: Path = typer.Option(None, "--checkpoint", help="Checkpoints you kept (an export or one "
                                    "signed note): exit 1 if the log was truncated or rewritten since"),
    key: str = typer.Option(None, help="The log's verifier key for --checkpoint (text or file); "
                            "default: the server's own"),
) -> None:
    """Re-check the whole hash chain; exit 0 when intact, 1 with the first broken position."""
    container = bootstrap()
    head = container.store.head()
    with Progress(transient=True) as progress:
        task = progress.add_task("verifying", total=head)

        def advancing() -> Iterator[RecordedEvent]:
            for event in container.store.iter_all(raw=True):
                progress.update(task, completed=event.position)
                yield event

        report: VerifyReport = verify_chain(advancing())
    kept_ok = True if checkpoint is None else _against_checkpoints(container, checkpoint, key)
    container.close()
    if report.intact:
        typer.echo(f"intact: {report.checked} events, positions 1..{report.last_position}")
    else:
        brk = report.first_break
        assert brk is not None
        typer.echo(f"BROKEN at position {brk.position}: {brk.reason} "
                   f"(events 1..{report.last_position} verified)")
    if not (report.intact and kept_ok):
        raise typer.Exit(1)


def _against_checkpoints(container: Container, path: Path, key: str | None) -> bool:
    """Every kept checkpoint against the log's chain hashes (``audit.verify.check_log``)."""
    from audit.checkpoints import CheckpointError, load_checkpoints
    from audit.verify import check_log
    from cli.audit import load_verifier

    verifier = load_verifier(key) or container.verifier
    if verifier is None:
        typer.echo("error: --checkpoint needs the log's verifier key (--key)", err=True)
        raise typer.Exit(2)
    try:
        kept = load_checkpoints(path.read_bytes(), verifier)
    except CheckpointError as exc:
        typer.echo(f"error: {path}: {exc}", err=True)
        raise typer.Exit(2) from None
    verdicts = check_log(_chain_hashes(container), [k.checkpoint for k in kept])
    for verdict in verdicts:
        typer.echo(f"{verdict.verdict.upper()}: {verdict.detail}")
    return all(v.ok for v in verdicts)


def _chain_hashes(container: Container) -> Iterator[str]:
    after = 0
    while links := container.store.chain_links(after, 10_000):
        yield from (link.hash for link in links)
        after = links[-1].position


def register(app: typer.Typer) -> None:
    from cli import relay

    app.command()(serve)
    app.command()(verify)
    relay.register(app)
