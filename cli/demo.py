"""`hcp demo`: the main job, embedded (SQLite, the database log, in-process training)."""

from __future__ import annotations

import typer

from hcp import migrate
from hcp.bootstrap import bootstrap
from hcp.settings import get_settings


def demo(sessions: int = typer.Option(240, help="Sessions of harness traffic per round")) -> None:
    """Run the whole loop: record, score, train, gate, register, re-score, audit."""
    from cli.demo_run import quiet_libraries, run_demo

    quiet_libraries()
    settings = get_settings()
    migrate.upgrade(settings.resolved_database_url)
    container = bootstrap(settings)
    try:
        outcome = run_demo(container, sessions)
    finally:
        container.close()
    if not outcome["chain_intact"] or not outcome["audit_ok"] or outcome["runs"] == 0:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(demo)
