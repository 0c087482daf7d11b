"""The SQL store's write path: numbered batches under the log's writer lock.

Positions must be gapless and in commit order, or a follower tailing "position >
checkpoint" could pass 7 while 6 is still uncommitted and never see 6. One
transaction-scoped advisory lock serialises appenders until commit; readers are not
blocked (SQLite: the engine's BEGIN IMMEDIATE already holds the write lock).

What happens under the lock is kept short, because every writer waits for it: the
batches arrive prepared (digests, hash templates, the rows' fixed columns as COPY text),
the lock and the reads it guards (duplicates, log head, stream heads with their tenants)
and the relay's wake-up notification go in one pipelined round trip on psycopg (stream
heads the store's own last commit left are not read again: events/stream_heads.py),
numbering only fills in positions and hashes, and the rows go in one COPY of text put
together from the prepared heads.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from sqlalchemy import select, text
from sqlalchemy.engine import Connection

from events.chain import GENESIS_HASH
from events.errors import EventLogError
from events.model import RecordedEvent, iso_time
from events.numbering import Numbering, Prepared
from events.relay_wake import EVENTS, OUTBOX_CHANNEL, notify_outbox
from events.sql_rows import COLUMNS, COPY_COLUMNS, copy_line, copy_row, event_from_row, to_row
from events.store import Appended
from events.stream_heads import Head, LogHead, StreamHeads
from events.tables import events as events_table
from kernel.clock import utcnow
from kernel.db import is_psycopg
from kernel.sql import copy_rows, copy_text, insert_few, insert_rows, lock_writers, pipelined, text_array

# Any constant works; it only has to be the same for every writer of this database.
APPEND_LOCK_KEY = 0x4843504C4F47  # "HCPLOG"

# Up to this many rows go in one INSERT (one round trip) rather than a COPY (two): single
# events and small batches are latency-bound, larger ones CPU-bound (COPY is cheaper per row).
FEW_ROWS = 16

Heads = dict[str, Head]  # stream -> (last seq, 0: new; tenant of its last event)
Existing = dict[uuid.UUID, RecordedEvent]


def append_batches(conn: Connection, batches: Sequence[Sequence[Prepared]],
                   ) -> list[list[Appended] | EventLogError]:
    """Number and store ``batches`` in the caller's transaction, in order; per batch its
    results or the error that refused it (its events are then not stored)."""
    return append_learning(conn, batches, None)[0]


def append_learning(conn: Connection, batches: Sequence[Sequence[Prepared]],
                    known: StreamHeads | None) -> tuple[list[list[Appended] | EventLogError], Learnt | None]:
    """``append_batches`` taking what ``known`` holds of the stream heads (PostgreSQL;
    events/stream_heads.py) and saying what it learnt, for ``known.committed`` once the
    transaction has committed."""
    items = [item for batch in batches for item in batch]
    streams = list(dict.fromkeys(item.new.stream_id for item in items))
    psycopg = is_psycopg(conn)
    if psycopg:
        ids = "{" + ",".join(dict.fromkeys(item.id_text for item in items)) + "}"
        existing, log_head, heads = _locked_reads_pipelined(
            conn, ids, known.to_read(streams) if known is not None else streams)
        if known is not None:
            heads = _with_known(conn, known, log_head, streams, heads)
    else:
        known = None
        uuids = list({item.new.event_id for item in items})
        existing, log_head, heads = _locked_reads(conn, uuids, streams)
    now = utcnow()
    numbering = Numbering(existing, *log_head, {s: seq for s, (seq, _) in heads.items()},
                          now, {s: tenant for s, (_, tenant) in heads.items()})
    outcomes: list[list[Appended] | EventLogError] = []
    for batch in batches:
        try:
            outcomes.append(numbering.number(batch))
        except EventLogError as exc:
            outcomes.append(exc)
    created = [(a.event, item) for batch, outcome in zip(batches, outcomes, strict=True)
               if not isinstance(outcome, Exception)
               for a, item in zip(outcome, batch, strict=True) if a.created]
    if psycopg and len(created) > FEW_ROWS:
        _copy(conn, created, iso_time(now))
    elif psycopg:
        insert_few(conn, events_table.name, COLUMNS, [copy_row(e, i.payload_json) for e, i in created])
    else:
        insert_rows(conn, events_table, [to_row(e) for e, _ in created])
    learnt = None if known is None else Learnt(
        log_head, (numbering.position, numbering.prev_hash),
        {s: (numbering.seqs.get(s, 0), numbering.owners.get(s)) for s in streams})
    return outcomes, learnt


class Learnt(NamedTuple):
    """What an append's transaction found and left: ``StreamHeads.committed``'s arguments."""

    started: LogHead
    ended: LogHead
    heads: Heads


def _with_known(conn: Connection, known: StreamHeads, log_head: LogHead, streams: list[str],
                read: Heads) -> Heads:
    """The heads of ``streams``: ``read`` with the log head, the rest as ``known`` holds
    them if the log has not moved since, else read now (a second round trip)."""
    heads = {**(known.known(log_head, streams) or {}), **read}
    missing = [stream for stream in streams if stream not in heads]
    if missing:
        [found] = pipelined(conn, [(_STREAM_HEADS, (text_array(missing),))])
        heads.update(_heads(missing, found))
    return heads


def _copy(conn: Connection, created: list[tuple[RecordedEvent, Prepared]], recorded_at: str) -> None:
    """The rows in one COPY, as text put together from each event's prepared head; through
    the driver's row formatting instead when an event has none (unusual field types) or
    a value holds a NUL (which the driver refuses, as it always has)."""
    lines: list[str] = []
    for event, item in created:
        if item.row_head is None:
            break
        lines.append(copy_line(item.row_head, event, recorded_at))
    else:
        data = "".join(lines)
        if "\x00" not in data:
            copy_text(conn, events_table.name, COPY_COLUMNS, data)
            return
    copy_rows(conn, events_table.name, COLUMNS, (copy_row(e, i.payload_json) for e, i in created))


def _locked_reads_pipelined(conn: Connection, ids: str, streams: list[str],
                            ) -> tuple[Existing, LogHead, Heads]:
    """The writer lock (and the relay's wake-up on commit), then the log head, the stream
    heads and which of the batch's events are stored (``ids``: the event ids as a uuid[]
    literal): two statements in one round trip. The reads are one statement after the
    lock's, so that they read after the lock is held (READ COMMITTED: a snapshot per
    statement) and the driver waits on the socket as few times as it can: in a busy API
    each wait gives the GIL away and taking it back costs the writer, who holds everyone's
    lock, up to a switch interval. Stored duplicates (a client's retry) are read whole in
    a second round trip. Arrays go as literals: psycopg's list dumper costs ~4 us per
    element in Python, and a UUID's text has nothing to quote."""
    reads = (_READS, (text_array(streams), ids)) if streams else (_READS_KNOWN_STREAMS, (ids,))
    _, rows = pipelined(conn, [_LOCK_AND_NOTIFY, reads])
    head = [(int(row[2]), str(row[3])) for row in rows if row[0] == _LOG_ROW]
    found = [row[1:] for row in rows if row[0] == _STREAM_ROW]
    stored = [row[1] for row in rows if row[0] == _STORED_ROW]
    existing: Existing = {}
    if stored:
        [whole] = pipelined(conn, [(_EXISTING, ("{" + ",".join(stored) + "}",))])
        existing = {row[1]: event_from_row(dict(zip(COLUMNS, row, strict=True))) for row in whole}
    return existing, head[0] if head else (0, GENESIS_HASH), _heads(streams, found)


def _locked_reads(conn: Connection, ids: list[uuid.UUID], streams: list[str],
                  ) -> tuple[Existing, LogHead, Heads]:
    lock_writers(conn, APPEND_LOCK_KEY)  # (a no-op on SQLite; see the module docstring)
    notify_outbox(conn, EVENTS)  # wakes the relay on commit (a no-op on SQLite)
    e = events_table.c
    existing = {row.event_id: event_from_row(row._mapping)
                for row in conn.execute(select(events_table).where(e.event_id.in_(ids)))} if ids else {}
    head = conn.execute(select(e.position, e.hash).order_by(e.position.desc()).limit(1)).first()
    # One round trip for the whole batch, not one per stream (that cost 70% of a
    # 200-event append when every event was on its own stream).
    query = _SQLITE_STREAM_HEADS if conn.dialect.name == "sqlite" else _PG_STREAM_HEADS
    found = conn.execute(query, {"ids": json.dumps(streams) if conn.dialect.name == "sqlite" else streams})
    return existing, (int(head[0]), str(head[1])) if head else (0, GENESIS_HASH), _heads(streams, found)


def _heads(streams: list[str], rows: Iterable[Sequence[Any]]) -> Heads:
    found = {row[0]: (int(row[1] or 0), row[2]) for row in rows}
    return {stream: found.get(stream, (0, None)) for stream in streams}


_EXISTING = f"SELECT {', '.join(COLUMNS)} FROM events WHERE event_id = ANY(%s::uuid[])"  # noqa: S608 (column names)
# Each stream's head (seq and tenant): one backward step on the (stream_id, stream_seq)
# unique index.
_STREAM_HEADS = (
    "SELECT ids.stream_id, h.stream_seq, h.tenant::text FROM unnest(%s::text[]) AS ids(stream_id) "
    "LEFT JOIN LATERAL (SELECT e.stream_seq, e.tenant FROM events e WHERE e.stream_id = ids.stream_id "
    "ORDER BY e.stream_seq DESC LIMIT 1) AS h ON true"
)
_LOCK_AND_NOTIFY = ("SELECT pg_advisory_xact_lock(%s), pg_notify(%s, %s)",
                    (APPEND_LOCK_KEY, OUTBOX_CHANNEL, EVENTS))
# The reads under the lock as one statement, one snapshot: rows tagged by what they are.
_LOG_ROW, _STREAM_ROW, _STORED_ROW = 0, 1, 2
_LOG_HEAD_ROW = "(SELECT 0, NULL::text, position, hash::text FROM events ORDER BY position DESC LIMIT 1)"
_STORED_ROWS = ("SELECT 2, event_id::text, NULL::bigint, NULL::text FROM events "
                "WHERE event_id = ANY(%s::uuid[])")
_READS = (
    f"{_LOG_HEAD_ROW} UNION ALL SELECT 1, s.* FROM ({_STREAM_HEADS}) AS s "  # noqa: S608
    f"UNION ALL {_STORED_ROWS}"
)
# Without the stream heads when every stream's head is known (the planner keeps
# re-planning a union over an empty array, a cheap plan it will not trade for its
# generic one).
_READS_KNOWN_STREAMS = f"{_LOG_HEAD_ROW} UNION ALL {_STORED_ROWS}"
_PG_STREAM_HEADS = text(_STREAM_HEADS.replace("%s::text[]", "CAST(:ids AS text[])"))
_SQLITE_STREAM_HEADS = text(
    "SELECT ids.value, h.stream_seq, h.tenant FROM json_each(:ids) AS ids "
    "LEFT JOIN events h ON h.stream_id = ids.value AND h.stream_seq = "
    "(SELECT max(e.stream_seq) FROM events e WHERE e.stream_id = ids.value)"
)
