"""Helpers every command group shares: a container whose domain errors become a clean
exit, and a stop flag that SIGTERM and Ctrl-C set."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

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


def stop_on_signals() -> threading.Event:
    """A flag long-running loops poll: they finish the batch in flight, then return, so
    nothing is left half-done (rewards stored before offsets, pages before checkpoints)."""
    stop = threading.Event()

    def handle(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
    return stop
