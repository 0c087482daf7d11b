"""Alembic is the only schema path: migrations equal the table definitions, and nothing
runs against a schema that is not at head."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from hcp import migrate
from hcp.bootstrap import bootstrap
from hcp.settings import Settings
from kernel.db import make_engine, metadata
from migrations.schema import load_all_tables


def test_migrated_schema_matches_the_table_definitions(engine):
    load_all_tables()
    with engine.connect() as conn:
        drift = compare_metadata(MigrationContext.configure(conn), metadata)
    assert drift == []


def test_server_refuses_a_schema_behind_head(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    migrate.upgrade(url, "0001")
    with pytest.raises(migrate.SchemaNotAtHead, match="hcp db upgrade"):
        bootstrap(Settings(database_url=url))
    migrate.upgrade(url)
    bootstrap(Settings(database_url=url)).close()


def test_cli_says_what_to_run_on_a_stale_schema(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    migrate.upgrade(url, "0001")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HCP_")},
           "HCP_DATABASE_URL": url}
    hcp = Path(sys.executable).parent / "hcp"
    run = subprocess.run([str(hcp), "verify"], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert "run `hcp db upgrade`" in run.stderr and "Traceback" not in run.stderr
    make_engine(url).dispose()
