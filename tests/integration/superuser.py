"""Rewriting history as only a superuser can: every append-only trigger out of the way.

PostgreSQL: the replication role ``replica`` skips user triggers for this transaction.
SQLite: drop every trigger of the file (the test database is a throwaway copy).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from kernel.db import is_postgres


def as_superuser(engine: Engine, change: Callable[[Connection], Any]) -> Any:
    with engine.begin() as conn:
        if is_postgres(conn):
            conn.execute(text("SET LOCAL session_replication_role = replica"))
        else:
            names = conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'trigger'")).scalars()
            for name in list(names):
                conn.execute(text(f'DROP TRIGGER "{name}"'))
        return change(conn)


def sql(statement: str, **params: Any) -> Callable[[Connection], Any]:
    return lambda conn: conn.execute(text(statement), params)
