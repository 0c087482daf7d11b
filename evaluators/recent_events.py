"""The tail of each stream from the batches already seen, so that the window a later batch
needs before its own events is usually in memory rather than one more query.

A window (evaluators/subjects.py) runs from just after the stream's last
``episode.completed`` before the batch's first closing event, up to the event before the
batch. This keeps, per stream, the events since its last ``episode.completed`` (or since
its first event) as long as they arrived as a gapless run of seqs: then every event of
such a window is here, and none of them ends an episode, so the window is this run up to
where the batch begins. Anything else (a gap, a run cut by the size bound, a stream not
seen since it began) is read from the store as before. The events are the stored rows
(the log's own, as the store reads them), so a window from here is the one the store
would give.
"""

from __future__ import annotations

from collections.abc import Iterable

from contract.vocabulary import EPISODE_ENDS
from events.model import RecordedEvent

# Bounds on memory: the streams least recently extended are forgotten first.
MAX_EVENTS = 20_000  # events kept in all (a few batches' worth of open conversations)
MAX_STREAMS = 10_000
MAX_RUN = 2_000  # events kept per stream; a longer run is forgotten (read from the store)


class RecentEvents:
    def __init__(self, max_events: int = MAX_EVENTS, max_streams: int = MAX_STREAMS,
                 max_run: int = MAX_RUN) -> None:
        self.max_events, self.max_streams, self.max_run = max_events, max_streams, max_run
        # stream -> (origin, run): run holds seqs origin, origin + 1, ... and no episode end;
        # origin is 1 or the seq after an episode.completed.
        self._runs: dict[str, tuple[int, list[RecordedEvent]]] = {}
        self._held = 0  # events in all runs

    def window(self, stream: str, stop: int) -> list[RecordedEvent] | None:
        """The window that ends at seq ``stop`` right before a batch whose events from
        ``stop + 1`` to its first closing event are gapless; None if it is not all here."""
        found = self._runs.get(stream)
        if found is None:
            return None
        origin, run = found
        if origin > stop + 1 or origin + len(run) - 1 < stop:
            return None
        return run[:stop - origin + 1]

    def add(self, events: Iterable[RecordedEvent]) -> None:
        """Extend the runs with a batch's events (in order within each stream)."""
        for event in events:
            stream, seq = event.stream_id, event.stream_seq
            found = self._runs.pop(stream, None)  # re-inserted last: the most recent
            if found is not None and seq < found[0] + len(found[1]):
                self._runs[stream] = found  # seen already (redelivered) or older than the run
                continue
            if found is not None:
                self._held -= len(found[1])
            if event.type in EPISODE_ENDS:
                self._runs[stream] = (seq + 1, [])
            elif found is not None and seq == found[0] + len(found[1]) and len(found[1]) < self.max_run:
                found[1].append(event)
                self._runs[stream] = found
                self._held += len(found[1])
            elif found is None and seq == 1:
                self._runs[stream] = (1, [event])
                self._held += 1
            # otherwise a gap, or too long a run: forget the stream until its next episode end
        while len(self._runs) > self.max_streams or self._held > self.max_events:
            self._held -= len(self._runs.pop(next(iter(self._runs)))[1])
