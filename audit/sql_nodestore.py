"""The node store in SQL (``merkle_nodes``), for SQLite and PostgreSQL.

Given a connection it works inside the caller's transaction (the tree builder appends
and commits its progress at once); without one, each call has its own. A proof is one
``WHERE (level, idx) IN (...)`` query on the primary key: about 2·log2(n) rows.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from psycopg.errors import IntegrityError as CopyIntegrityError
from sqlalchemy import func, select, text, tuple_
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from audit.merkle import HASH_SIZE, NodeId
from audit.nodestore import MissingNodeError, Node, NodeStore, NodeStoreError, StaleTreeError
from audit.tables import merkle_nodes as mn
from kernel.db import is_postgres, is_psycopg, reading
from kernel.sql import copy_text, insert_rows

READ_CHUNK = 400  # (level, idx) pairs per SQLite query: 800 parameters, under its limit


def completed_nodes(old_size: int, new_size: int) -> set[NodeId]:
    """The complete subtrees that appending leaves old_size..new_size-1 finishes."""
    found: set[NodeId] = set()
    level = 0
    while (new_size >> level) > (old_size >> level):
        found.update(NodeId(level, i) for i in range(old_size >> level, new_size >> level))
        level += 1
    return found


def _check_completed(old_size: int, new_size: int, nodes: Sequence[Node]) -> None:
    """That ``nodes`` are exactly ``completed_nodes(old_size, new_size)``, each a 32-byte hash.

    Without building that set: every node lies in its level's range of completed indexes,
    none repeats, and there are as many as the ranges hold, so they are all of them."""
    expected, level = 0, 0
    while (new_size >> level) > (old_size >> level):
        expected += (new_size >> level) - (old_size >> level)
        level += 1
    in_range = all(n[0] >= 0 and (old_size >> n[0]) <= n[1] < (new_size >> n[0]) for n, _ in nodes)
    if not in_range or len(nodes) != expected or len({n for n, _ in nodes}) != expected:
        raise NodeStoreError(f"the nodes given are not exactly those that sizes {old_size} to "
                             f"{new_size} complete (a gap, an overwrite or a repeat)")
    if any(len(value) != HASH_SIZE for _, value in nodes):
        raise NodeStoreError("every node is a 32-byte hash")


class SqlNodeStore(NodeStore):
    def __init__(self, engine: Engine, conn: Connection | None = None) -> None:
        self.engine, self.conn = engine, conn

    def tree_size(self) -> int:
        with reading(self.engine, self.conn) as conn:
            return _size(conn)

    def read_nodes(self, ids: Collection[NodeId]) -> dict[NodeId, bytes]:
        wanted = sorted(set(ids))
        found: dict[NodeId, bytes] = {}
        with reading(self.engine, self.conn) as conn:
            for rows in _node_reads(conn, wanted):
                found.update((NodeId(int(r[0]), int(r[1])), bytes(r[2])) for r in rows)
        missing = [node for node in wanted if node not in found]
        if missing:
            raise MissingNodeError(f"no node at level {missing[0].level}, idx {missing[0].idx} "
                                   f"({len(missing)} missing)")
        return found

    def write_nodes(self, old_size: int, new_size: int, nodes: Sequence[Node]) -> None:
        _check_completed(old_size, new_size, nodes)
        with self._writing() as conn:
            size = _size(conn)
            if size != old_size:
                raise StaleTreeError(f"tree has size {size}, the append started from {old_size}")
            try:
                if is_psycopg(conn):
                    # COPY text written here: two rows per event, and the driver's
                    # formatting of each value had cost more than hashing them.
                    copy_text(conn, mn.name, ("level", "idx", "hash"),
                              "".join([f"{n[0]}\t{n[1]}\t\\\\x{value.hex()}\n" for n, value in nodes]))
                else:
                    insert_rows(conn, mn, [{"level": n.level, "idx": n.idx, "hash": value}
                                           for n, value in nodes])
            except (IntegrityError, CopyIntegrityError) as exc:  # a concurrent appender was first
                raise StaleTreeError(f"another writer extended the tree from size {old_size}") from exc

    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        if self.conn is not None:
            yield self.conn
            return
        with self.engine.begin() as own:
            yield own


# PostgreSQL: two array parameters, one statement text whatever the proof's length, so it
# is prepared once and never planned again; half the time of an expanded row-value IN.
_PG_READ = text("SELECT n.level, n.idx, n.hash FROM unnest(CAST(:levels AS smallint[]), "
                "CAST(:idxs AS bigint[])) AS k(level, idx) JOIN merkle_nodes n "
                "ON n.level = k.level AND n.idx = k.idx")


def _node_reads(conn: Connection, wanted: Sequence[NodeId]) -> Iterator[Iterable[Any]]:
    if is_postgres(conn):
        yield conn.execute(_PG_READ, {"levels": [n.level for n in wanted], "idxs": [n.idx for n in wanted]})
        return
    for start in range(0, len(wanted), READ_CHUNK):
        keys = [tuple(node) for node in wanted[start:start + READ_CHUNK]]
        key = tuple_(mn.c.level, mn.c.idx)
        yield conn.execute(select(mn.c.level, mn.c.idx, mn.c.hash).where(key.in_(keys)))


# max(idx) on level 0 is one step down the primary key index. Built once: it is read
# several times per page of the tree builder, and building it cost more than running it.
_SIZE = select(func.coalesce(func.max(mn.c.idx) + 1, 0)).where(mn.c.level == 0)


def _size(conn: Connection) -> int:
    return int(conn.execute(_SIZE).scalar() or 0)
