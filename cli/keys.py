"""`hcp keys …`: API keys (the key is printed once, as the last line)."""

from __future__ import annotations

import typer

from access.keys import SCOPES, UnknownScope, create_key
from hcp.bootstrap import bootstrap

app = typer.Typer(help="API keys", no_args_is_help=True)


@app.command()
def create(
    scope: list[str] = typer.Option(..., "--scope", "-s", help=f"One of {', '.join(SCOPES)}"),
    label: str = typer.Option(None, help="Who or what the key is for"),
) -> None:
    """Create a key with the given scopes; prints the key as the last line."""
    container = bootstrap()
    try:
        key = create_key(container.engine, scope, label)
    except UnknownScope as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    finally:
        container.close()
    typer.echo(f"created key with scopes {sorted(set(scope))}; store it now, it is not shown again:")
    typer.echo(key)
