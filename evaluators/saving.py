"""Saving one batch's results while the worker reads and scores the next.

With the database log, a batch's rewards and the reader's position commit in one
transaction (the reward writers' lock and its reads, the COPY, the checkpoint, the
commit); a re-evaluation chunk's rewards commit with the job's progress. Run in a thread
of its own, PostgreSQL's share of that work and the wait for it overlap the worker's
Python on the next batch (two cores instead of one at a time). What keeps it
exactly-once:

* at most one save is in flight: the next is handed over only after the last one was
  collected (``wait``), so batches are saved in log order, each in its own transaction
  with the position its own batch reached (handed over with the batch: the reader has
  moved on by the time the save runs);
* a save that fails is raised by the ``wait`` before the next batch's save, so no later
  batch is saved after it; the worker then rewinds the reader to the last committed
  position and reads everything after it again;
* a crash at any point leaves the batches up to some batch saved, each with its
  position, and nothing of the later ones: the restarted worker reads on from there
  (and the reward keys make a re-scored subject add nothing anyway).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

T = TypeVar("T")


class BackgroundSave(Generic[T]):
    """One save at a time, in a thread of its own; its result or error comes back on
    ``wait`` (``idle`` when nothing was in flight)."""

    def __init__(self, idle: T) -> None:
        self.idle = idle
        self._executor: ThreadPoolExecutor | None = None  # made by the first save
        self._in_flight: Future[T] | None = None

    @property
    def in_flight(self) -> bool:
        return self._in_flight is not None

    def submit(self, save: Callable[[], T]) -> None:
        """Start ``save``; the one before must have been collected with ``wait``."""
        if self._in_flight is not None:
            raise RuntimeError("a save is still in flight: wait for it first")
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="reward-save")
        self._in_flight = self._executor.submit(save)

    def wait(self) -> T:
        """Block until the save in flight has finished; its result (``idle`` when there was
        none), or its exception raised here. Either way, nothing is in flight afterwards."""
        future, self._in_flight = self._in_flight, None
        return self.idle if future is None else future.result()

    def close(self) -> None:
        """Let the save in flight finish (its result is dropped) and end the thread."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor, self._in_flight = None, None
