"""Reading the database log's next batch while the worker scores this one.

A poll of 2000 events waits for PostgreSQL (the query, the rows on the wire) for part of
its time; read in a thread of its own while the worker scores the batch before, that wait
overlaps the worker's Python, as the background save's does (evaluators/saving.py). Only
the database reader: Kafka's consumer is not thread-safe. What keeps it exactly-once:

* one thread polls the reader at a time: a read ahead is collected (``poll``, ``drop``)
  before the reader is polled again, rewound, or asked whether it has caught up;
* each batch comes with the position the reader reached right after it, and that batch's
  save commits that position, never the reader's current one (a read ahead may have
  moved it past the batch);
* a batch read ahead and then dropped (a failure, a stop) is read again: the worker
  rewinds the reader to the last committed position, where the saves have got to.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress

from events.feed import DatabaseLogReader
from events.model import RecordedEvent

Batch = tuple[list[RecordedEvent], int]  # the events and the reader's position after them


class ReadAhead:
    """Polls ``reader`` for the next batch in the background once a batch was handed out."""

    def __init__(self, reader: DatabaseLogReader, batch_size: int) -> None:
        self.reader, self.batch_size = reader, batch_size
        self._executor: ThreadPoolExecutor | None = None  # made by the first read ahead
        self._ahead: Future[Batch] | None = None

    def poll(self, timeout: float) -> Batch:
        """The next batch (the one read ahead, if it found any; else a poll that waits up
        to ``timeout``) with its position; after a batch with events, the one after it is
        read in the background. An error of the read ahead is raised here."""
        events, position = self._collect()
        if not events:
            events = self.reader.poll(self.batch_size, timeout)
            position = self.reader.position
        if events:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="event-read")
            self._ahead = self._executor.submit(self._read)
        return events, position

    def drop(self) -> None:
        """Let the read ahead end and forget its batch (the caller rewinds the reader)."""
        with suppress(Exception):  # its batch, if any, is read again after the rewind
            self._collect()

    def _collect(self) -> Batch:
        future, self._ahead = self._ahead, None
        return ([], self.reader.position) if future is None else future.result()

    def _read(self) -> Batch:
        return self.reader.poll(self.batch_size, 0.0), self.reader.position
