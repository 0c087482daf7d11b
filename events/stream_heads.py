"""What one store knows of the stream heads, good while the log is as its last commit left it.

Under the writer lock an append reads each of its streams' heads (last seq, tenant of the
last event): an index step and a heap fetch per stream, a third of the server's work for
a batch spread over many streams. A writer that was also the last to commit knows those
heads already: they are what its own reads and writes left. "Also the last to commit" is
checked, not assumed: the log head (position and chain hash, read under the lock anyway)
must be the one this store's last commit left. Positions are gapless and hashes chain
over everything before them, so an equal head means no other writer (another process,
another store, a caller's transaction) has committed since, and no row is gone.

The entries always hold at ``mark``: a transaction that started at the mark adds what it
read and wrote and moves the mark to where it ended; one that did not (another writer
came between) replaces them. A failed or uncertain commit forgets everything. While
other writers keep moving the log, every append reads all its streams as before (no
second round trip for the ones it expected to know); the first head found unmoved
trusts the entries again.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

Head = tuple[int, str | None]  # (last seq, 0 for a new stream; tenant of its last event)
LogHead = tuple[int, str]  # (position, hash) of the log's last event


class StreamHeads:
    """Thread-safe: a store's appends on several threads share it."""

    def __init__(self, limit: int = 100_000) -> None:
        self.limit = limit  # entries kept at most (then forgotten and learnt again)
        self._lock = threading.Lock()
        self._mark: LogHead | None = None
        self._heads: dict[str, Head] = {}
        self._trusted = True  # False while other writers keep moving the log

    def to_read(self, streams: Sequence[str]) -> list[str]:
        """The streams whose heads to read with the log head: the ones not known, or all
        of them while other writers keep moving the log."""
        with self._lock:
            if self._mark is None or not self._trusted:
                return list(streams)
            return [stream for stream in streams if stream not in self._heads]

    def known(self, log_head: LogHead, streams: Sequence[str]) -> dict[str, Head] | None:
        """The known heads among ``streams`` if ``log_head`` (read under the writer lock)
        is the mark; None, and everything forgotten, if the log has moved on."""
        with self._lock:
            if self._mark is None:
                return None
            if log_head != self._mark:
                self._trusted = False
                self._forget()
                return None
            self._trusted = True
            heads = self._heads
            return {stream: heads[stream] for stream in streams if stream in heads}

    def committed(self, started: LogHead, ended: LogHead, heads: dict[str, Head]) -> None:
        """A transaction that started at log head ``started`` committed and left the log
        at ``ended``, with ``heads`` (every stream it read or wrote) as it left them."""
        with self._lock:
            if started != self._mark or len(self._heads) + len(heads) > self.limit:
                self._heads.clear()
            self._heads.update(heads)
            self._mark = ended

    def forget(self) -> None:
        """Know nothing (a transaction failed, or its commit may or may not have happened)."""
        with self._lock:
            self._forget()

    def _forget(self) -> None:
        self._heads.clear()
        self._mark = None
