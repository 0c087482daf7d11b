"""The container a command works with (the stop flag that SIGTERM and Ctrl-C set is in
cli/signals.py; how errors leave a command, in cli/errors.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from kernel.errors import Invalid

if TYPE_CHECKING:
    from hcp.bootstrap import Container


class PortTaken(Invalid):
    """A usage error (status 2): the command line names a port this machine cannot give."""

    code = "port_taken"


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


def check_port(host: str, port: int) -> None:
    """Refuse a port that is taken before anything starts: uvicorn would start the app,
    fail to bind, and exit 3, which is the status of "not found" here (docs/cli.md)."""
    import errno
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # As uvicorn binds: a port whose last connections are in TIME_WAIT is free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise PortTaken(f"port {port} on {host} is taken (another server is listening "
                                "there): stop it, or choose another port with --port") from None
            raise PortTaken(f"cannot listen on {host}:{port}: {exc.strerror}") from None
