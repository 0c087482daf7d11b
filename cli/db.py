"""`hcp db …`: schema management."""

from __future__ import annotations

import typer

from cli.output import JsonOpt, command_group, print_json

app = command_group("Database schema (Alembic)")


@app.command()
def upgrade(revision: str = typer.Argument("head")) -> None:
    """Migrate the database to the latest schema (or REVISION); creates an embedded one."""
    from hcp import migrate
    from hcp.settings import get_settings
    from kernel.db import make_engine

    url = get_settings().resolved_database_url
    migrate.upgrade(url, revision)
    engine = make_engine(url)
    typer.echo(f"schema at {migrate.current_revision(engine)}")
    engine.dispose()


@app.command()
def current(as_json: bool = JsonOpt) -> None:
    """Print the schema revision the database is at, and the one this release needs."""
    from hcp import migrate
    from hcp.settings import get_settings
    from kernel.db import make_engine

    settings = get_settings()
    migrate.require_database(settings)
    url = settings.resolved_database_url
    engine = make_engine(url)
    try:
        found, needed = migrate.current_revision(engine), migrate.head_revision(url)
    finally:
        engine.dispose()
    if as_json:
        print_json({"database": found, "release_needs": needed, "at_head": found == needed})
    else:
        typer.echo(f"database: {found or 'none'}; release needs: {needed}")
