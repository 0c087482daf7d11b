"""A throw-away PostgreSQL database, migrated to head, for one benchmark run."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import text
from sqlalchemy.engine import make_url

from access.keys import create_key
from hcp import migrate
from kernel.db import make_engine


@contextmanager
def fresh_database(admin_url: str) -> Iterator[str]:
    """Create ``hcp_bench_<random>``, migrate it, yield its URL, drop it afterwards."""
    name = f"hcp_bench_{uuid.uuid4().hex[:8]}"
    admin = make_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    try:
        migrate.upgrade(url)
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


@contextmanager
def named_database(admin_url: str, name: str, keep: bool) -> Iterator[tuple[str, bool]]:
    """``name``, created and migrated to head if missing; yields (URL, existed before).

    With ``keep`` it is left for the next run (a benchmark whose data takes minutes to
    build reuses it: ``--reuse``); without, it is dropped afterwards.
    """
    admin = make_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        existed = conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}).first()
        if existed is None:
            conn.execute(text(f"CREATE DATABASE {name}"))
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    try:
        migrate.upgrade(url)
        yield url, existed is not None
    finally:
        if not keep:
            with admin.connect() as conn:
                conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


@contextmanager
def database_with_key(admin_url: str) -> Iterator[tuple[str, str]]:
    """A ``fresh_database`` and an API key with ``events:write`` in it: (URL, key)."""
    with fresh_database(admin_url) as url:
        engine = make_engine(url)
        key = create_key(engine, ["events:write"], "bench")
        engine.dispose()
        yield url, key
