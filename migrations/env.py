"""Alembic environment. The URL comes from the caller (``hcp db upgrade``, the tests), which
reads it from HCP settings; this package reads no configuration of its own."""

from __future__ import annotations

from alembic import context

from kernel.db import make_engine, metadata
from migrations.schema import load_all_tables

load_all_tables()
target_metadata = metadata


def run_migrations() -> None:
    connectable = context.config.attributes.get("connection")
    if connectable is not None:
        context.configure(connection=connectable, target_metadata=target_metadata)
        with context.begin_transaction():
            context.run_migrations()
        return
    url = context.config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("no database URL: run `hcp db upgrade`, which reads HCP_DATABASE_URL")
    engine = make_engine(url)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


run_migrations()
