"""Which subjects a batch of events finishes, assembled from the store (the system of record).

A consumer sees events one partition at a time, possibly redelivered, and a subject may
have started many polls ago; so the events in hand only say *which* subjects closed. Each
closed subject is then read back from the events table: the same rows, whichever worker
reads them, so every worker builds the same subject (contract/subject.py cuts subjects on
events in the stream, never on a clock).

A subject never spans an episode end (``episode.completed``, ``session.expired``: an
episode ends there, and a turn ends at the next ``turn.user`` or episode end), so for a
stream it is enough to read from the last episode end before the first closing event in
the batch, up to the last one: bounded reads, all streams of a batch in one query. The part of a window
before the batch is mostly the tail of the previous batches, kept in memory
(evaluators/recent_events.py); only the rest is read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import attrgetter

from contract.subject import Subject, closed_subjects
from contract.vocabulary import EPISODE_ENDS, TURN_USER
from evaluators.recent_events import RecentEvents
from events.model import RecordedEvent
from events.store import EventStore

# Only these event types can close a subject of either kind.
CLOSING_TYPES = frozenset({TURN_USER, *EPISODE_ENDS})


def closing_seqs(events: Iterable[RecordedEvent]) -> dict[str, list[int]]:
    """Per stream, the sorted, distinct seqs of the events that may close a subject."""
    found: dict[str, set[int]] = {}
    for event in events:
        if event.type in CLOSING_TYPES:
            found.setdefault(event.stream_id, set()).add(event.stream_seq)
    return {stream: sorted(seqs) for stream, seqs in found.items()}


def subjects_closed_at(window: Sequence[RecordedEvent], closers: Iterable[int],
                       kinds: Iterable[str]) -> list[Subject]:
    """The subjects of ``kinds`` in ``window`` (one stream, starting at an episode boundary)
    that the events at seqs ``closers`` close."""
    wanted = set(closers)
    ordered = sorted(window, key=_SEQ)
    subjects: list[Subject] = []
    for kind in sorted(kinds):
        subjects += [subject for closer, subject in closed_subjects(ordered, kind) if closer in wanted]
    return subjects


_SEQ = attrgetter("stream_seq")


class SubjectReader:
    """Finds and assembles the subjects that a batch of events closes."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.recent = RecentEvents()  # windows of streams the last batches left open

    def closed_by(self, events: Sequence[RecordedEvent], kinds: Iterable[str]) -> list[Subject]:
        """The subjects of ``kinds`` closed by any of ``events``.

        Only the part of each window *before* the batch is read: a stream's events in a
        batch are a contiguous run of its seqs (a position range, or a run of offsets in
        one partition), and they are the stored rows themselves. A stream whose events in
        the batch are not contiguous (never seen, but cheap to check) is read whole.
        """
        kinds = set(kinds)
        closers = closing_seqs(events)
        if not closers or not kinds:
            self.recent.add(events)
            return []
        in_batch = _contiguous_runs(events, closers)
        reads = {stream: (seqs[0], in_batch[stream][0].stream_seq - 1 if stream in in_batch else seqs[-1])
                 for stream, seqs in closers.items()}
        windows: dict[str, list[RecordedEvent]] = {}
        for stream in in_batch:  # the batch's events before its first closer are gapless
            window = self.recent.window(stream, reads[stream][1])
            if window is not None:
                windows[stream] = window
        windows.update(self._read({s: r for s, r in reads.items() if r[1] > 0 and s not in windows}))
        self.recent.add(events)
        subjects: list[Subject] = []
        for stream, seqs in closers.items():
            window = windows.get(stream, []) + in_batch.get(stream, [])
            subjects += subjects_closed_at(window, seqs, kinds)
        return subjects

    def closed_at(self, closers: dict[str, list[int]], kinds: Iterable[str]) -> list[Subject]:
        """The subjects of ``kinds`` closed by the events at these (stream, seqs)."""
        kinds = set(kinds)
        closers = {stream: sorted(seqs) for stream, seqs in closers.items() if seqs}
        if not closers or not kinds:
            return []
        windows = self._read({stream: (seqs[0], seqs[-1]) for stream, seqs in closers.items()})
        subjects: list[Subject] = []
        for stream, seqs in closers.items():
            subjects += subjects_closed_at(windows.get(stream, []), seqs, kinds)
        return subjects

    def _read(self, reads: dict[str, tuple[int, int]]) -> dict[str, list[RecordedEvent]]:
        return self.store.read_windows(reads, episode_end=EPISODE_ENDS)


def _contiguous_runs(events: Sequence[RecordedEvent],
                     closers: dict[str, list[int]]) -> dict[str, list[RecordedEvent]]:
    """Per stream with closers, its batch events up to its last closer, if they are a
    gapless run of seqs (redelivered duplicates dropped)."""
    by_stream: dict[str, dict[int, RecordedEvent]] = {}
    for event in events:
        if event.stream_id in closers:
            by_stream.setdefault(event.stream_id, {}).setdefault(event.stream_seq, event)
    runs: dict[str, list[RecordedEvent]] = {}
    for stream, by_seq in by_stream.items():
        last = closers[stream][-1]
        seqs = sorted(seq for seq in by_seq if seq <= last)
        if seqs == list(range(seqs[0], last + 1)):
            runs[stream] = [by_seq[seq] for seq in seqs]
    return runs
