"""The `hcp` command: one sub-command group per part of the system.

Kept light: the command modules import typer and the standard library only, and each
command imports what it runs when it runs, so `hcp --help` and `hcp GROUP --help` never
import the server (bench/cli_startup.py measures it; tests/unit/test_cli_startup.py holds
it). Help pages are click's plain ones, not typer's rich panels: those import rich,
markdown and pygments on every help page. Errors and exit statuses are one convention for
every command (cli/errors.py, docs/cli.md).
"""

from __future__ import annotations

import sys

import typer

from cli import (
    approvals,
    audit,
    contract,
    db,
    demo,
    evaluator,
    events,
    gateway,
    judges,
    keys,
    lineage,
    log,
    otlp,
    rebuild,
    registry,
    router,
    serving,
    trainer,
    webhooks,
)
from cli.errors import HcpGroup, exit_help, stdout_gone

app = typer.Typer(rich_markup_mode=None, cls=HcpGroup, no_args_is_help=True,
                  pretty_exceptions_enable=False,
                  help=f"HCP contract and versioning server. Exit status: {exit_help()} "
                       "(docs/cli.md).")
app.add_typer(db.app, name="db")
app.add_typer(keys.app, name="keys")
app.add_typer(webhooks.app, name="webhooks")
app.add_typer(otlp.app, name="otlp")
app.add_typer(router.app, name="router")
app.add_typer(judges.app, name="judges")
for group in (log, gateway, contract, evaluator, events, serving, trainer, registry, approvals, lineage,
              demo, audit, rebuild):
    group.register(app)


def main() -> None:
    """The console entry point."""
    try:
        app()
    finally:
        try:
            sys.stdout.flush()  # here, not at interpreter exit, where a closed pipe would print
        except BrokenPipeError:
            stdout_gone()


if __name__ == "__main__":
    main()
