"""Which subjects a batch of events finishes, assembled from the store (the system of record).

A consumer sees events one partition at a time, possibly redelivered, and a subject may
have started many polls ago; so the events in hand only say *which* subjects closed. Each
closed subject is then read back from the events table: the same rows, whichever worker
reads them, so every worker builds the same subject (contract/subject.py cuts subjects on
events in the stream, never on a clock).

A subject never spans an ``episode.completed`` (an episode ends there, and a turn ends at
the next ``turn.user`` or ``episode.completed``), so for a stream it is enough to read from
the last ``episode.completed`` before the first closing event in the batch: one bounded
read per stream instead of the whole conversation every time.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from contract.subject import Subject, finished_subjects
from contract.vocabulary import EPISODE_COMPLETED, TURN_USER
from events.model import RecordedEvent
from events.store import EventStore
from hcp.db import is_postgres

# Only these event types can close a subject of either kind.
CLOSING_TYPES = frozenset({TURN_USER, EPISODE_COMPLETED})


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
    ordered = sorted(window, key=lambda e: e.stream_seq)
    subjects: list[Subject] = []
    for kind in sorted(kinds):
        subjects += [s for s in finished_subjects(ordered, kind) if _closed_at(s, ordered) in wanted]
    return subjects


def _closed_at(subject: Subject, ordered: Sequence[RecordedEvent]) -> int | None:
    # An episode is closed by its own last event; a turn by the first event after it
    # (the next turn.user or episode.completed: a turn takes everything up to that).
    if subject.kind == "episode":
        return subject.last_seq
    return next((e.stream_seq for e in ordered if e.stream_seq > subject.last_seq), None)


class SubjectReader:
    """Finds and assembles the subjects that a batch of events closes."""

    def __init__(self, engine: Engine, store: EventStore) -> None:
        self.engine, self.store = engine, store

    def closed_by(self, events: Sequence[RecordedEvent], kinds: Iterable[str]) -> list[Subject]:
        """The subjects of ``kinds`` closed by any of ``events``."""
        return self.closed_at(closing_seqs(events), kinds)

    def closed_at(self, closers: dict[str, list[int]], kinds: Iterable[str]) -> list[Subject]:
        """The subjects of ``kinds`` closed by the events at these (stream, seqs)."""
        kinds = set(kinds)
        closers = {stream: sorted(seqs) for stream, seqs in closers.items() if seqs}
        if not closers or not kinds:
            return []
        with self.engine.connect() as conn:
            starts = window_starts(conn, {stream: seqs[0] for stream, seqs in closers.items()})
        subjects: list[Subject] = []
        for stream, seqs in closers.items():
            start = starts.get(stream, 0)
            window = self.store.read_stream(stream, after_seq=start, limit=seqs[-1] - start)
            subjects += subjects_closed_at(window, seqs, kinds)
        return subjects


def window_starts(conn: Connection, first_closer: dict[str, int]) -> dict[str, int]:
    """Per stream, the seq of the last ``episode.completed`` before its first closer (0: none).

    One round trip for every stream of the batch: a query per stream cost more than the
    scoring itself on short polls.
    """
    if is_postgres(conn):
        rows = conn.execute(_PG_STARTS, {"ids": list(first_closer), "seqs": list(first_closer.values()),
                                         "type": EPISODE_COMPLETED})
    else:
        pairs = json.dumps([[stream, seq] for stream, seq in first_closer.items()])
        rows = conn.execute(_SQLITE_STARTS, {"pairs": pairs, "type": EPISODE_COMPLETED})
    return {row[0]: int(row[1] or 0) for row in rows}


_PG_STARTS = text(
    "SELECT w.stream_id, (SELECT max(e.stream_seq) FROM events e WHERE e.stream_id = w.stream_id "
    "AND e.stream_seq < w.seq AND e.type = :type) "
    "FROM unnest(CAST(:ids AS text[]), CAST(:seqs AS bigint[])) AS w(stream_id, seq)"
)
_SQLITE_STARTS = text(
    "SELECT json_extract(w.value, '$[0]'), (SELECT max(e.stream_seq) FROM events e "
    "WHERE e.stream_id = json_extract(w.value, '$[0]') AND e.stream_seq < json_extract(w.value, '$[1]') "
    "AND e.type = :type) FROM json_each(:pairs) AS w"
)
