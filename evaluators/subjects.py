"""Which subjects a batch of events finishes, assembled from the store (the system of record).

A consumer sees events one partition at a time, possibly redelivered, and a subject may
have started many polls ago; so the events in hand only say *which* subjects closed. Each
closed subject is then read back from the events table: the same rows, whichever worker
reads them, so every worker builds the same subject (contract/subject.py cuts subjects on
events in the stream, never on a clock).

A subject never spans an ``episode.completed`` (an episode ends there, and a turn ends at
the next ``turn.user`` or ``episode.completed``), so for a stream it is enough to read from
the last ``episode.completed`` before the first closing event in the batch, up to the
last one: bounded reads, all streams of a batch in one query.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import BigInteger, String, and_, select, text
from sqlalchemy.engine import Connection, Engine

from contract.subject import Subject, finished_subjects
from contract.vocabulary import EPISODE_COMPLETED, TURN_USER
from events.model import RecordedEvent
from events.store import EventStore, _from_row, _upcast
from events.tables import events as events_table
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
            windows = read_windows(conn, {stream: (seqs[0], seqs[-1]) for stream, seqs in closers.items()})
        subjects: list[Subject] = []
        for stream, seqs in closers.items():
            subjects += subjects_closed_at(windows.get(stream, []), seqs, kinds)
        return subjects


def read_windows(conn: Connection, closers: dict[str, tuple[int, int]]) -> dict[str, list[RecordedEvent]]:
    """Per stream, its events after the last ``episode.completed`` before the first closer,
    up to the last closer, in seq order.

    One query for every stream of the batch: a read per stream cost as much as scoring the
    subjects (a connection checkout and a round trip for each of hundreds of streams).
    """
    e = events_table.c
    if is_postgres(conn):
        windows = _PG_WINDOWS.bindparams(ids=list(closers), firsts=[f for f, _ in closers.values()],
                                         lasts=[last for _, last in closers.values()],
                                         type=EPISODE_COMPLETED)
    else:
        pairs = json.dumps([[stream, first, last] for stream, (first, last) in closers.items()])
        windows = _SQLITE_WINDOWS.bindparams(pairs=pairs, type=EPISODE_COMPLETED)
    w = windows.columns(stream_id=String, start=BigInteger, stop=BigInteger).subquery("w")
    query = (select(events_table)
             .join(w, and_(e.stream_id == w.c.stream_id, e.stream_seq > w.c.start,
                           e.stream_seq <= w.c.stop))
             .order_by(e.stream_id, e.stream_seq))
    found: dict[str, list[RecordedEvent]] = {}
    for row in conn.execute(query):
        event = recorded_event(row._mapping)
        found.setdefault(event.stream_id, []).append(event)
    return found


def recorded_event(row: Any) -> RecordedEvent:
    # The store's own row mapping and upcasting, so a window reads exactly like
    # read_stream would. (Private there: worth a public ``read_windows`` on the port.)
    return _upcast(_from_row(row))


_PG_WINDOWS = text(
    "SELECT w.stream_id, COALESCE((SELECT max(e.stream_seq) FROM events e "
    "WHERE e.stream_id = w.stream_id AND e.stream_seq < w.first AND e.type = :type), 0) AS start, "
    "w.last AS stop FROM unnest(CAST(:ids AS text[]), CAST(:firsts AS bigint[]), "
    "CAST(:lasts AS bigint[])) AS w(stream_id, first, last)"
)
_SQLITE_WINDOWS = text(
    "SELECT w.stream_id, COALESCE((SELECT max(e.stream_seq) FROM events e "
    "WHERE e.stream_id = w.stream_id AND e.stream_seq < w.first AND e.type = :type), 0) AS start, "
    "w.last AS stop FROM (SELECT json_extract(value, '$[0]') AS stream_id, "
    "json_extract(value, '$[1]') AS first, json_extract(value, '$[2]') AS last "
    "FROM json_each(:pairs)) AS w"
)
