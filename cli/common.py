"""Helpers every command group shares: a container whose domain errors become a clean
exit (the stop flag that SIGTERM and Ctrl-C set is in cli/signals.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer

from contract.document import ContractInvalid
from hcp.bootstrap import Container, bootstrap
from kernel.errors import DomainError


@contextmanager
def cli_container() -> Iterator[Container]:
    """A container for one command; a refused request prints why and exits 2."""
    container = bootstrap()
    try:
        yield container
    except ContractInvalid as exc:
        for problem in exc.problems:
            typer.echo(f"error: {problem}", err=True)
        raise typer.Exit(2) from None
    except (DomainError, ValueError, LookupError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    finally:
        container.close()
