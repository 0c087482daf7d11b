"""Engine construction, the shared table metadata and the append-only guard.

Tables are declared with SQLAlchemy Core next to the package that owns them
(``events/tables.py``, ``contract/tables.py`` …) on the one ``metadata`` below, so
Alembic and the tests see the whole schema.
"""

from __future__ import annotations

import select
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import MetaData, create_engine, event, exc
from sqlalchemy.engine import Connection, Engine

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


def make_engine(url: str, **kwargs: Any) -> Engine:
    """Build an engine; on SQLite, serialise writers with BEGIN IMMEDIATE.

    pysqlite opens transactions lazily and in DEFERRED mode, so two writers can both
    read the log head and then race to insert the same position. Taking the write lock
    at BEGIN makes position allocation on SQLite as serial as the advisory lock does on
    PostgreSQL.
    """
    if url.startswith("sqlite"):
        db_path = url.split("///", 1)[-1]
        if db_path and db_path != ":memory:":
            Path(db_path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False}, **kwargs)
        _make_sqlite_transactions_immediate(engine)
        return engine
    kwargs.setdefault("pool_size", 10)
    kwargs.setdefault("max_overflow", 20)
    if "pool_pre_ping" in kwargs:  # the caller's choice: SQLAlchemy's ping on every checkout
        return create_engine(url, **kwargs)
    engine = create_engine(url, **kwargs)
    _ping_when_in_doubt(engine)
    return engine


# A pooled connection idle longer than this is pinged before use, whatever its socket says.
PING_AFTER_IDLE_S = 5.0


def _ping_when_in_doubt(engine: Engine) -> None:
    """Check a pooled connection before handing it out, as ``pool_pre_ping`` does, but
    without its round trip (one per transaction: 10% of a 100-event append) when the
    connection was in use moments ago and its socket is quiet.

    A server that ends a connection (restart, ``pg_terminate_backend``) sends an error and
    closes the socket, so an idle connection's socket that has something to read is in
    doubt; so is one idle for longer than ``PING_AFTER_IDLE_S`` (a peer gone without a
    word). Those are pinged, and a dead one is replaced before anyone sees it (all the
    pool's older connections are dropped with it, as ``pool_pre_ping`` does).
    """
    dialect = engine.dialect

    @event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_conn: Any, record: Any) -> None:
        record.info["hcp_idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checked_out(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        since = record.info.pop("hcp_idle_since", None)
        if since is None:  # a fresh connection (the info dict goes with an invalidated one)
            return
        if time.monotonic() - since < PING_AFTER_IDLE_S and not _has_unread_data(dbapi_conn):
            return
        try:
            dialect.do_ping(dbapi_conn)
        except dialect.loaded_dbapi.Error as err:
            if dialect.is_disconnect(err, dbapi_conn, None):
                raise exc.InvalidatePoolError() from err
            raise


def _has_unread_data(dbapi_conn: Any) -> bool:
    """Whether the server sent anything to this idle connection (True when unsure)."""
    try:
        poller = select.poll()
        poller.register(dbapi_conn.fileno(), select.POLLIN)
        return bool(poller.poll(0))
    except Exception:  # noqa: BLE001 (no socket to ask: ping it)
        return True


def _make_sqlite_transactions_immediate(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # let us emit BEGIN ourselves
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def is_postgres(engine_or_conn: Any) -> bool:
    return bool(engine_or_conn.dialect.name == "postgresql")


def is_psycopg(engine_or_conn: Any) -> bool:
    """PostgreSQL through psycopg: the raw-driver paths (pipelines, COPY, LISTEN) apply."""
    return bool(engine_or_conn.dialect.driver == "psycopg")


# --- append-only guard -----------------------------------------------------------

PG_REFUSE_FUNCTION = """
CREATE OR REPLACE FUNCTION hcp_refuse_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'table % is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""


def append_only_ddl(table: str, dialect: str) -> list[str]:
    """DDL that makes ``table`` refuse UPDATE, DELETE and TRUNCATE.

    A correction is a new row, never an edit: this is the database's half of the
    append-only invariant, so even a buggy release or a hand-typed query cannot rewrite
    history without first dropping these triggers (which a superuser can, and which the
    hash chain then exposes).
    """
    if dialect == "postgresql":
        return [
            PG_REFUSE_FUNCTION,
            f"CREATE TRIGGER {table}_no_update_delete BEFORE UPDATE OR DELETE ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION hcp_refuse_change()",
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION hcp_refuse_change()",
        ]
    # SQLite has no TRUNCATE; its DELETE-without-WHERE shortcut is disabled by triggers.
    return [
        f"CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table} BEGIN "
        f"SELECT RAISE(ABORT, 'table {table} is append-only: UPDATE is not allowed'); END",
        f"CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table} BEGIN "
        f"SELECT RAISE(ABORT, 'table {table} is append-only: DELETE is not allowed'); END",
    ]


@contextmanager
def reading(engine: Engine, conn: Connection | None = None) -> Iterator[Connection]:
    """``conn`` when the caller has a transaction open (its reads must see the same state,
    and on SQLite a second connection would wait for the caller's write lock), else a
    connection of its own."""
    if conn is not None:
        yield conn
        return
    with engine.connect() as own:
        yield own
