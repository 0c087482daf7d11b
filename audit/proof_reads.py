"""What an inclusion proof reads after the event's position: the proof's nodes and the
latest checkpoint's position, in one round trip, with the tree's upper levels kept in
memory.

A complete subtree never changes once written, so a node read once can be kept: the
nodes at ``UPPER`` levels and above (about 2n / 2**UPPER of them: a few thousand for a
log of millions) are shared by every proof, and after the first few proofs only the
nodes near the leaf are read. The proof is made for the size of the checkpoint this
process saw last; the same statement says which checkpoint is the latest now, and only
when a newer one was signed (once a minute in service) is it read and the proof made again.
"""

from __future__ import annotations

import threading
from collections.abc import Collection

from sqlalchemy import func, select, text, tuple_
from sqlalchemy.engine import Connection

from audit.merkle import NodeId
from audit.nodestore import MissingNodeError
from audit.tables import audit_checkpoints, merkle_nodes
from kernel.db import is_postgres

UPPER = 8  # levels kept: a node of level 8 or above covers 256 leaves or more
MAX_KEPT = 1 << 20  # nodes kept at most (32 MB of hashes): a log of 10**8 events and more


class UpperLevels:
    """The upper levels' nodes read so far, shared by every proof of the process."""

    def __init__(self) -> None:
        self._nodes: dict[NodeId, bytes] = {}
        self._lock = threading.Lock()

    def read(self, conn: Connection, wanted: Collection[NodeId]) -> tuple[dict[NodeId, bytes], int]:
        """The ``wanted`` nodes, and the latest checkpoint's position (0: none), in one
        round trip (none at all for the nodes kept, when the caller needs no position).

        Raises:
            MissingNodeError: the store lacks one of them.
        """
        found = {node: self._nodes[node] for node in wanted if node in self._nodes}
        missing = sorted(set(wanted) - set(found))
        rows, latest = _read(conn, missing)
        found.update(rows)
        absent = [node for node in missing if node not in rows]
        if absent:
            raise MissingNodeError(f"no node at level {absent[0].level}, idx {absent[0].idx} "
                                   f"({len(absent)} missing)")
        kept = {node: value for node, value in rows.items() if node.level >= UPPER}
        if kept and len(self._nodes) < MAX_KEPT:
            with self._lock:
                self._nodes.update(kept)
        return found, latest


# PostgreSQL: the nodes (two array parameters, one statement text whatever the proof's
# length, so it is prepared once) and the latest checkpoint position, in one statement.
_PG_READ = text("SELECT n.level, n.idx, n.hash FROM unnest(CAST(:levels AS smallint[]), "
                "CAST(:idxs AS bigint[])) AS k(level, idx) JOIN merkle_nodes n "
                "ON n.level = k.level AND n.idx = k.idx "
                "UNION ALL SELECT -1, COALESCE(max(position), 0), NULL FROM audit_checkpoints")


def _read(conn: Connection, wanted: list[NodeId]) -> tuple[dict[NodeId, bytes], int]:
    rows: dict[NodeId, bytes] = {}
    if is_postgres(conn):
        latest = 0
        for level, idx, value in conn.execute(_PG_READ, {"levels": [n.level for n in wanted],
                                                          "idxs": [n.idx for n in wanted]}):
            if level < 0:
                latest = int(idx)
            else:
                rows[NodeId(int(level), int(idx))] = bytes(value)
        return rows, latest
    mn = merkle_nodes.c
    for start in range(0, len(wanted), 400):  # 800 parameters a query, under SQLite's limit
        keys = [tuple(node) for node in wanted[start:start + 400]]
        query = select(mn.level, mn.idx, mn.hash).where(tuple_(mn.level, mn.idx).in_(keys))
        rows.update((NodeId(int(r[0]), int(r[1])), bytes(r[2])) for r in conn.execute(query))
    newest = conn.execute(select(func.coalesce(func.max(audit_checkpoints.c.position), 0))).scalar()
    return rows, int(newest or 0)
