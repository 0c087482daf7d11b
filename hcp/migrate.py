"""Schema upgrades through Alembic, and the check that refuses a stale schema."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

import migrations

MIGRATIONS_DIR = Path(migrations.__file__).parent


class SchemaNotAtHead(RuntimeError):
    pass


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def head_revision(url: str) -> str | None:
    return ScriptDirectory.from_config(alembic_config(url)).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def require_schema_at_head(engine: Engine) -> None:
    """Refuse to run against a schema older (or newer) than this code expects."""
    url = engine.url.render_as_string(hide_password=False)
    current, head = current_revision(engine), head_revision(url)
    if current != head:
        raise SchemaNotAtHead(
            f"database schema is at revision {current or 'none'}, this release needs {head}: "
            "run `hcp db upgrade`"
        )
