"""A free TCP port on the loopback, for a server a test starts (the API, a private
PostgreSQL or Redis). The kernel picks it; the port is free when asked, which is enough
for a test that binds it right away."""

from __future__ import annotations

import socket


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
