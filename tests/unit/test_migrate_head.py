"""The schema check reads the chain's head from the scripts without Alembic: it must be
Alembic's own answer."""

from __future__ import annotations

from pathlib import Path

from hcp import migrate


def test_the_declared_head_is_alembics_head(tmp_path: Path) -> None:
    assert migrate.declared_head() == migrate.head_revision(f"sqlite:///{tmp_path / 'x.sqlite3'}")

