"""The `hcp` command: one sub-command group per part of the system."""

from __future__ import annotations

import typer

from cli import (
    approvals,
    audit,
    contract,
    db,
    demo,
    evaluator,
    keys,
    lineage,
    log,
    rebuild,
    registry,
    serving,
    trainer,
)
from hcp.migrate import SchemaNotAtHead

app = typer.Typer(help="HCP contract and versioning server", no_args_is_help=True,
                  pretty_exceptions_enable=False)
app.add_typer(db.app, name="db")
app.add_typer(keys.app, name="keys")
for group in (log, contract, evaluator, serving, trainer, registry, approvals, lineage, demo, audit,
              rebuild):
    group.register(app)


def main() -> None:
    """The console entry point: a stale schema is a one-line message, not a traceback."""
    try:
        app()
    except SchemaNotAtHead as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
