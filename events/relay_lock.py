"""One active relay per database: the others wait as hot standbys.

Two relays tailing the same outbox would both publish every page (duplicates, never
losses, since delivery is at-least-once anyway) and race on the checkpoint. A session
advisory lock held on a dedicated connection makes one of them the publisher; if its
process dies, PostgreSQL drops the connection and the lock with it, and a standby takes
over from the checkpoint.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from kernel.db import is_postgres


class RelayLock:
    def __init__(self, engine: Engine, name: str) -> None:
        self.engine = engine
        self.key = zlib.crc32(f"hcp-relay:{name}".encode())
        self._conn: Connection | None = None

    def acquire(self, stop: threading.Event, poll_s: float = 1.0, wait: bool = True,
                on_wait: Callable[[], None] | None = None) -> bool:
        """Until this process is the relay (True), or ``stop`` is set or, with ``wait``
        False, the first try fails (False)."""
        if not is_postgres(self.engine):
            return True  # SQLite: one process owns the file; nothing to arbitrate
        conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        waited = False
        while not stop.is_set():
            if conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": self.key}).scalar():
                self._conn = conn
                return True
            if not wait:
                break
            if not waited and on_wait is not None:
                on_wait()
            waited = True
            stop.wait(poll_s)
        conn.close()
        return False

    def release(self) -> None:
        if self._conn is not None:
            self._conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": self.key})
            self._conn.close()
            self._conn = None
