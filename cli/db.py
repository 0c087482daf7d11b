"""`hcp db …`: schema management."""

from __future__ import annotations

import typer

from hcp import migrate
from hcp.settings import get_settings
from kernel.db import make_engine

app = typer.Typer(help="Database schema (Alembic)", no_args_is_help=True)


@app.command()
def upgrade(revision: str = typer.Argument("head")) -> None:
    """Migrate the database to the latest schema (or REVISION)."""
    url = get_settings().resolved_database_url
    migrate.upgrade(url, revision)
    engine = make_engine(url)
    typer.echo(f"schema at {migrate.current_revision(engine)}")
    engine.dispose()


@app.command()
def current() -> None:
    """Print the schema revision the database is at, and the one this release needs."""
    settings = get_settings()
    migrate.require_database(settings)
    url = settings.resolved_database_url
    engine = make_engine(url)
    typer.echo(f"database: {migrate.current_revision(engine) or 'none'}; "
               f"release needs: {migrate.head_revision(url)}")
    engine.dispose()
