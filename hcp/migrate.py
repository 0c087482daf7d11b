"""Schema upgrades through Alembic, and the check that refuses a stale schema."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

import migrations

if TYPE_CHECKING:
    from hcp.settings import Settings

MIGRATIONS_DIR = Path(migrations.__file__).parent


class SchemaNotAtHead(RuntimeError):
    pass


class DatabaseMissing(SchemaNotAtHead):
    """The embedded database file does not exist (a mistyped ``HCP_DATA_DIR``, or
    `hcp db upgrade` never ran)."""


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


def require_database(settings: Settings) -> None:
    """Refuse an embedded database file that does not exist yet; connecting would create
    an empty one and every read would report on nothing."""
    if settings.database_url:
        return
    path = settings.data_dir / "hcp.sqlite3"
    if not path.exists():
        raise DatabaseMissing(
            f"no database at {path} (HCP_DATA_DIR={settings.data_dir}): "
            "`hcp db upgrade` creates one; check HCP_DATA_DIR if you expected one there")
