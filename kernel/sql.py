"""What the append-only, positioned tables share: the writer lock, the head, bulk inserts.

The event log and the reward records both hand out a gapless ``position`` in commit
order, because followers tail them by position: a reader that saw 7 must never find a
late-committing 6. The recipe is the same for both, so it lives here once:

1. ``lock_writers`` takes a transaction-scoped advisory lock (PostgreSQL; one key per
   table) held until commit, so the next writer reads the head only after our rows are
   visible. On SQLite the engine's BEGIN IMMEDIATE already serialises writers.
2. ``head`` reads the last position under that lock; the writer numbers its rows on.
3. ``insert_rows`` writes them in one statement (COPY on psycopg).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

from sqlalchemy import Column, Table, func, select, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, StatementError

from kernel.db import is_postgres


def lock_writers(conn: Connection, key: int) -> None:
    """Serialise the writers of one table until this transaction ends (PostgreSQL)."""
    if is_postgres(conn):
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})


def head(conn: Connection, position: Column[Any]) -> int:
    """The largest position stored so far (0 for an empty table)."""
    return int(conn.execute(select(func.max(position))).scalar() or 0)


def insert_rows(conn: Connection, table: Table, rows: Sequence[dict[str, Any]],
                json_columns: Collection[str] = ()) -> None:
    """Insert ``rows`` (dicts keyed by column name) inside the caller's transaction.

    On psycopg this is COPY: a third of the per-row cost of a multi-row INSERT through
    SQLAlchemy, and it commits (or not) with everything else in the transaction.
    """
    if not rows:
        return
    if conn.dialect.driver != "psycopg":
        conn.execute(table.insert(), list(rows))
        return
    from psycopg.types.json import Json

    names = [column.name for column in table.columns]
    copy_rows(conn, table.name, names,
              ([Json(row[n]) if n in json_columns else row[n] for n in names] for row in rows))


def copy_rows(conn: Connection, table: str, columns: Sequence[str],
              rows: Iterable[Sequence[Any]]) -> None:
    """COPY ``rows`` (values in ``columns`` order) into ``table`` in the caller's
    transaction (psycopg only). A JSON column takes its JSON as text, written verbatim."""
    import psycopg

    raw = conn.connection.driver_connection
    assert raw is not None
    statement = f"COPY {table} ({', '.join(columns)}) FROM STDIN"
    try:
        with raw.cursor() as cursor, cursor.copy(statement) as copy:
            for row in rows:
                copy.write_row(row)
    except psycopg.Error as exc:
        raise _as_sqlalchemy_error(conn, statement, exc, psycopg.Error) from exc


def copy_text(conn: Connection, table: str, columns: Sequence[str], data: str) -> None:
    """COPY ``data``, rows already in PostgreSQL's text format (tab-separated, ``\\N`` for
    NULL, backslash escapes, a newline after each), into ``table`` in the caller's
    transaction (psycopg only): one write instead of the driver formatting every value."""
    import psycopg

    raw = conn.connection.driver_connection
    assert raw is not None
    statement = f"COPY {table} ({', '.join(columns)}) FROM STDIN"
    try:
        with raw.cursor() as cursor, cursor.copy(statement) as copy:
            copy.write(data)
    except psycopg.Error as exc:
        raise _as_sqlalchemy_error(conn, statement, exc, psycopg.Error) from exc


def insert_few(conn: Connection, table: str, columns: Sequence[str],
               rows: Sequence[Sequence[Any]]) -> None:
    """``rows`` as one multi-row INSERT in the caller's transaction (psycopg only): one
    round trip, where COPY takes two (start, then data and end). For a few rows, where
    the round trips are the cost; values as ``copy_rows`` takes them (a JSON column's
    JSON as text, stored verbatim by a ``json`` column)."""
    import psycopg

    if not rows:
        return
    raw = conn.connection.driver_connection
    assert raw is not None
    row_marks = "(" + ", ".join(["%s"] * len(columns)) + ")"
    statement = (f"INSERT INTO {table} ({', '.join(columns)}) "  # noqa: S608 (names, not values)
                 f"VALUES {', '.join([row_marks] * len(rows))}")
    try:
        raw.execute(statement, [value for row in rows for value in row])
    except psycopg.Error as exc:
        raise _as_sqlalchemy_error(conn, statement, exc, psycopg.Error) from exc


def pipelined(conn: Connection, statements: Sequence[tuple[str, Sequence[Any] | None]],
              ) -> list[list[tuple[Any, ...]]]:
    """Run ``statements`` (psycopg placeholders) in order, in one network round trip, in
    the caller's transaction; the rows of each (psycopg only).

    The server still runs them one after the other, each with its own snapshot (READ
    COMMITTED): a lock taken by the first is held when the later ones read.
    """
    import psycopg

    raw = conn.connection.driver_connection
    assert raw is not None
    try:
        with raw.pipeline():
            cursors = [raw.execute(sql, params) for sql, params in statements]
        return [cursor.fetchall() if cursor.description else [] for cursor in cursors]
    except psycopg.Error as exc:
        raise _as_sqlalchemy_error(conn, statements[0][0], exc, psycopg.Error) from exc


def driver_rows(conn: Connection, statement: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Run one small statement (psycopg placeholders) straight on the driver, in the
    caller's transaction; its rows (psycopg only). For the statements a loop runs many
    times a second on one connection (the relay's checkpoints and lock check): through
    SQLAlchemy's execution context each cost three to four times the CPU; psycopg
    prepares them on the server after a few uses."""
    import psycopg

    raw = conn.connection.driver_connection
    assert raw is not None
    try:
        cursor = raw.execute(statement, params)
        return cursor.fetchall() if cursor.description else []
    except psycopg.Error as exc:
        raise _as_sqlalchemy_error(conn, statement, exc, psycopg.Error) from exc


def text_array(texts: Iterable[str]) -> str:
    """A ``text[]`` literal of ``texts``, each quoted, its quotes and backslashes escaped:
    psycopg's list dumper costs ~4 us per element in Python (hundreds per statement)."""
    return "{" + ",".join(['"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"' for t in texts]) + "}"


def _as_sqlalchemy_error(conn: Connection, statement: str, exc: Any,
                         driver_error: type[Exception]) -> Exception:
    """A driver error of the raw connection as SQLAlchemy would have raised it.

    The COPY bypasses SQLAlchemy, so its errors arrive as bare psycopg exceptions, which
    callers that retry on ``DBAPIError`` (the evaluator, the relay) would not catch; and a
    connection the server dropped (a restart) must be invalidated, or the pool would hand
    the dead connection out again.
    """
    disconnected = conn.dialect.is_disconnect(exc, conn.connection.dbapi_connection, None)
    if disconnected:
        conn.invalidate(exc)
    # ``exc`` is the driver's DB-API error, a type SQLAlchemy's stubs cannot name (so Any),
    # which makes ``instance`` untyped too; what it builds is a StatementError.
    wrapped: StatementError = DBAPIError.instance(statement, None, exc, driver_error,
                                                  connection_invalidated=disconnected,
                                                  dialect=conn.dialect)
    return wrapped
