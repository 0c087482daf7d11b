"""Alembic environment: the URL comes from HCP settings, never from alembic.ini."""

from __future__ import annotations

from alembic import context

from hcp.db import make_engine, metadata
from hcp.schema import load_all_tables
from hcp.settings import get_settings

load_all_tables()
target_metadata = metadata


def run_migrations() -> None:
    connectable = context.config.attributes.get("connection")
    if connectable is not None:
        context.configure(connection=connectable, target_metadata=target_metadata)
        with context.begin_transaction():
            context.run_migrations()
        return
    url = context.config.get_main_option("sqlalchemy.url") or get_settings().resolved_database_url
    engine = make_engine(url)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


run_migrations()
