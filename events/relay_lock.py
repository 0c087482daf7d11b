"""One active relay per database: the others wait as hot standbys.

Two relays tailing the same outbox would both publish every page (duplicates, never
losses, since delivery is at-least-once anyway) and race on the checkpoint. A session
advisory lock held on a dedicated connection makes one of them the publisher; if its
process dies, PostgreSQL drops the connection and the lock with it, and a standby takes
over from the checkpoint.

The lock lives exactly as long as that connection. When PostgreSQL restarts, every
session ends and the lock with it, silently: a standby that reconnects takes it while
the old holder, which has not noticed, goes on publishing. So the holder asks ``held``
before every page it publishes (one round trip on the lock's own connection) and stops
when the answer is not a clear yes; and a standby treats a failing connection as "try
again later", never as a reason to exit.
"""

from __future__ import annotations

import logging
import threading
import zlib
from collections.abc import Callable

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from kernel.db import is_postgres, is_psycopg
from kernel.sql import driver_rows

log = logging.getLogger(__name__)

# The lock's (classid, objid) as pg_locks shows a one-key advisory lock: the high and low
# halves of the bigint key, with objsubid 1.
_HELD_SQL = (
    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() "
    "AND granted AND objsubid = 1 AND classid = CAST(%s AS oid) AND objid = CAST(%s AS oid)"
)
_HELD = text(_HELD_SQL.replace("%s", ":hi", 1).replace("%s", ":lo", 1))


class LockLost(RuntimeError):
    """The relay lock's session ended (a PostgreSQL restart, a killed backend): another
    relay may publish now, so this one must stop and stand by again."""


class RelayLock:
    def __init__(self, engine: Engine, name: str) -> None:
        self.engine = engine
        self.key = zlib.crc32(f"hcp-relay:{name}".encode())
        self._conn: Connection | None = None

    def acquire(self, stop: threading.Event, poll_s: float = 1.0, wait: bool = True,
                on_wait: Callable[[], None] | None = None) -> bool:
        """Until this process is the relay (True), or ``stop`` is set or, with ``wait``
        False, the first try fails (False). Connection errors (the database restarting)
        count as a failed try: the standby reconnects on its next one."""
        if not is_postgres(self.engine):
            return True  # SQLite: one process owns the file; nothing to arbitrate
        waited = False
        while not stop.is_set():
            if self._try_once():
                return True
            if not wait:
                break
            if not waited and on_wait is not None:
                on_wait()
            waited = True
            stop.wait(poll_s)
        return False

    def held(self) -> bool:
        """Whether this process still holds the lock: asked on the lock's own connection,
        so a restart (which ends that session) answers False, never a stale True."""
        if not is_postgres(self.engine):
            return True
        if self._conn is None:
            return False
        try:
            hi, lo = divmod(self.key, 1 << 32)
            if is_psycopg(self._conn):  # (asked before every page: straight to the driver)
                return bool(driver_rows(self._conn, _HELD_SQL, (hi, lo))[0][0])
            return bool(self._conn.execute(_HELD, {"hi": hi, "lo": lo}).scalar())
        except DBAPIError as exc:
            log.warning("the relay lock's connection failed (%s): the lock is lost", exc)
            self._drop()
            return False

    def check(self) -> None:
        """Raise ``LockLost`` unless the lock is still held (before each publish)."""
        if not self.held():
            self._drop()
            raise LockLost("the relay lock was lost (its database session ended)")

    def release(self) -> None:
        """Let go; never raises (the connection may already be dead, and the lock with it)."""
        if self._conn is None:
            return
        try:
            self._conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": self.key})
        except DBAPIError as exc:
            log.info("releasing the relay lock on a dead connection (%s): it is gone anyway", exc)
        self._drop()

    def _try_once(self) -> bool:
        try:
            if self._conn is None:
                self._conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            got = self._conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": self.key}).scalar()
        except DBAPIError as exc:
            log.warning("standby: the database is unreachable (%s); trying again", exc)
            self._drop()
            return False
        return bool(got)

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            conn.invalidate()  # never back into the pool: its session (and lock) are gone
            conn.close()
        except Exception as exc:  # a dead socket may fail in any way; it is dropped regardless
            log.debug("closing the relay lock's connection: %s", exc)
