"""Schema upgrades through Alembic, and the check that refuses a stale schema.

The check runs before every command and every server start, so it does not import
Alembic: it reads the stored revision with one query and the chain's head from the
scripts' ``revision``/``down_revision`` lines (Alembic's ScriptDirectory imports every
script, a third of a second each time). Upgrades go through Alembic itself.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import migrations

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy.engine import Engine

    from hcp.settings import Settings

MIGRATIONS_DIR = Path(migrations.__file__).parent


class SchemaNotAtHead(RuntimeError):
    pass


class DatabaseMissing(SchemaNotAtHead):
    """The embedded database file does not exist (a mistyped ``HCP_DATA_DIR``, or
    `hcp db upgrade` never ran)."""


def alembic_config(url: str) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    from alembic import command

    command.upgrade(alembic_config(url), revision)


def head_revision(url: str) -> str | None:
    """The chain's head as Alembic computes it (what ``declared_head`` must agree with)."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config(url)).get_current_head()


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


@lru_cache(maxsize=1)
def declared_head() -> str | None:
    """The one revision of the scripts that no other script names as its down_revision
    (tests/unit/test_migrate_head.py holds it to ``head_revision``)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (MIGRATIONS_DIR / "versions").glob("*.py"):
        found = _assignments(path)
        if isinstance(found.get("revision"), str):
            revisions.add(found["revision"])
            down = found.get("down_revision")
            parents.update([down] if isinstance(down, str) else down or ())
    heads = revisions - parents
    if len(heads) != 1:
        raise RuntimeError(f"the migration scripts have {len(heads)} heads: {sorted(heads)}")
    return heads.pop()


def _assignments(path: Path) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for node in ast.parse(path.read_text()).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id in ("revision", "down_revision"):
            values[target.id] = ast.literal_eval(node.value) if node.value else None  # type: ignore[attr-defined]
    return values


def stored_revision(engine: Engine) -> str | None:
    """What ``alembic_version`` holds (None: no schema yet), read with one query."""
    from sqlalchemy import inspect, text

    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        found = sorted(conn.execute(text("SELECT version_num FROM alembic_version")).scalars())
    return ",".join(found) or None


def require_schema_at_head(engine: Engine) -> None:
    """Refuse to run against a schema older (or newer) than this code expects."""
    current, head = stored_revision(engine), declared_head()
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
