"""The container a command works with (the stop flag that SIGTERM and Ctrl-C set is in
cli/signals.py; how errors leave a command, in cli/errors.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hcp.bootstrap import Container


@contextmanager
def cli_container() -> Iterator[Container]:
    """A container for one command, closed when it ends; what it refuses is left to the
    root group (cli/errors.py), which prints it and exits with the status of its kind.

    The composition root is imported here, when a command runs, never with the command
    modules: `hcp --help` must not import the server."""
    from hcp.bootstrap import bootstrap

    container = bootstrap()
    try:
        yield container
    finally:
        container.close()
