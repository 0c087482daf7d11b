"""Appending reward records: numbered and chained under the reward writers' lock.

Two rules shape ``append_rewards``:

* ``position`` is gapless and in commit order, because the outbox relay tails it to
  ``hcp.rewards`` and the trainer cuts datasets by it: a reader that saw 7 must never
  find a late-committing 6. Positions are therefore allocated under a transaction-scoped
  lock held until commit, as the event store does (a different lock key: reward writers
  need not wait for event writers). On SQLite the engine's BEGIN IMMEDIATE serialises.
* Insert-or-skip: under that lock, rows whose (subject, contract version) already exists
  are dropped *before* positions are handed out. ``ON CONFLICT DO NOTHING`` would not do:
  the skipped row would already own a position and leave a gap. The UNIQUE constraint
  stays as the last line of defence against a writer that bypasses this module.

On psycopg the lock, the two reads it guards (which of the subjects are stored, the chain
head) and the relay's wake-up go in one pipelined round trip, and the rows in one COPY.
The chain's canonical bytes are written before the lock is taken, all but the position
(evaluators/chain.py ``link_template``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import any_, bindparam, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection
from sqlalchemy.types import String

from evaluators.chain import GENESIS_HASH, chained, link_template
from evaluators.model import RewardRecord, errors_text
from evaluators.tables import reward_records as rr
from events.relay_wake import REWARDS, notify_outbox, notify_statement
from kernel.clock import utc
from kernel.db import is_postgres, is_psycopg
from kernel.sql import insert_rows, lock_writers, pipelined, text_array

REWARD_LOCK_KEY = 0x484350525744  # "HCPRWD"; the event log uses "HCPLOG"
JSON_COLUMNS = frozenset({"event_ids", "components", "gates", "judgements"})

Keys = set[tuple[str, str, int]]  # (subject, contract, version) of stored rewards


def append_rewards(conn: Connection, records: Sequence[RewardRecord]) -> list[RewardRecord]:
    """Store, in ``conn``'s transaction, the records not stored yet, in order; return
    those, with their positions and hashes."""
    if not records:
        return []
    subject_ids = list({r.subject_id for r in records})
    templates = [link_template(r) for r in records]  # the chain's work that needs no lock
    # Held until this transaction commits: the next writer reads the head only after
    # our rows are visible, so positions commit in order and without gaps.
    pipelined_reads = is_psycopg(conn)
    if pipelined_reads:
        seen, (position, prev_hash) = _locked_reads_pipelined(conn, subject_ids)
    else:
        seen, (position, prev_hash) = _locked_reads(conn, subject_ids)
    created: list[RewardRecord] = []
    for record, template in zip(records, templates, strict=True):
        if record.key in seen:
            continue  # redelivery, a restart, a second worker: already judged
        seen.add(record.key)
        position += 1
        placed = chained(record, position, prev_hash, template)
        prev_hash = placed.hash or ""
        created.append(placed)
    insert_rows(conn, rr, [to_row(r) for r in created], JSON_COLUMNS)
    if created and not pipelined_reads:  # (psycopg: sent with the locked reads)
        notify_outbox(conn, REWARDS)  # the relay publishes them on commit, not at its next poll
    return created


def _locked_reads_pipelined(conn: Connection, subject_ids: list[str]) -> tuple[Keys, tuple[int, str]]:
    """The lock, the stored keys of these subjects and the chain head, in one round trip
    (each statement still reads after the lock is held); the ids as one array literal.
    The relay's wake-up rides along: it is delivered on commit, and a transaction that
    stores nothing new (a redelivery) only costs the relay a read that finds nothing."""
    _, stored, head, _ = pipelined(conn, [
        ("SELECT pg_advisory_xact_lock(%s)", (REWARD_LOCK_KEY,)),
        (_STORED_KEYS, (text_array(subject_ids),)),
        (_CHAIN_HEAD, None),
        notify_statement(REWARDS),
    ])
    return _keys(stored), (int(head[0][0]), str(head[0][1])) if head else (0, GENESIS_HASH)


def _locked_reads(conn: Connection, subject_ids: list[str]) -> tuple[Keys, tuple[int, str]]:
    lock_writers(conn, REWARD_LOCK_KEY)  # (a no-op on SQLite; see the module docstring)
    columns = (rr.c.subject_id, rr.c.contract_name, rr.c.contract_version)
    if is_postgres(conn):
        rows = conn.execute(select(*columns).where(rr.c.subject_id == any_(_IDS)), {"ids": subject_ids})
    else:
        rows = conn.execute(select(*columns).where(rr.c.subject_id.in_(subject_ids)))
    seen = _keys(rows)
    head = conn.execute(select(rr.c.position, rr.c.hash).order_by(rr.c.position.desc()).limit(1)).first()
    return seen, (int(head[0]), str(head[1])) if head else (0, GENESIS_HASH)


def _keys(rows: Any) -> Keys:
    return {(r[0], r[1], int(r[2])) for r in rows}


_IDS = bindparam("ids", type_=ARRAY(String))
_STORED_KEYS = ("SELECT subject_id, contract_name, contract_version FROM reward_records "
                "WHERE subject_id = ANY(%s::text[])")
_CHAIN_HEAD = "SELECT position, hash FROM reward_records ORDER BY position DESC LIMIT 1"


def to_row(record: RewardRecord) -> dict[str, Any]:
    """The row of a record as ``insert_rows`` takes it (JSON columns as objects): its
    fields, which are the columns by name but for ``errors`` (the ``error`` text), copied
    at once rather than read one by one (one row per reward stored)."""
    row = record.__dict__.copy()
    row["event_ids"] = list(record.event_ids)
    row["components"], row["gates"] = dict(record.components), dict(record.gates)
    row["error"] = errors_text(row.pop("errors"))
    row["judgements"] = [dict(j) for j in record.judgements]
    row["created_at"] = utc(record.created_at)
    return row
