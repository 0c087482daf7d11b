"""Top-level commands of the log: serve the API, verify the chain, run the relay."""

from __future__ import annotations

from collections.abc import Iterator

import typer
from rich.progress import Progress

from events.chain import VerifyReport, verify_chain
from events.model import RecordedEvent
from hcp.bootstrap import bootstrap
from hcp.settings import get_settings


def serve(host: str = typer.Option(None), port: int = typer.Option(None)) -> None:
    """Run the HTTP API (refuses to start on a schema that is not at head)."""
    import uvicorn

    from api.app import create_app

    settings = get_settings()
    container = bootstrap(settings)
    uvicorn.run(create_app(container), host=host or settings.api_host,
                port=port or settings.api_port, log_level="info")


def verify() -> None:
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
    container.close()
    if report.intact:
        typer.echo(f"intact: {report.checked} events, positions 1..{report.last_position}")
        return
    brk = report.first_break
    assert brk is not None
    typer.echo(f"BROKEN at position {brk.position}: {brk.reason} "
               f"(events 1..{report.last_position} verified)")
    raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    from cli import relay

    app.command()(serve)
    app.command()(verify)
    relay.register(app)
