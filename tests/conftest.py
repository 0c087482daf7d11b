"""Shared fixtures: fresh databases per test (SQLite and real PostgreSQL), service URLs.

Real services are found through HCP_TEST_POSTGRES_URL, HCP_TEST_KAFKA_BOOTSTRAP and
HCP_TEST_REDIS_URL (``scripts/services.sh up`` prints them). Without them those tests
skip, unless HCP_TEST_REQUIRE_SERVICES=1 (CI sets it), where a missing service fails.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine, make_url

from hcp import migrate
from kernel.db import make_engine

# One template per pytest process: suites run side by side (several checkouts sharing one
# PostgreSQL) must not drop each other's template while it is being cloned.
TEMPLATE_DB = f"hcp_test_template_{os.getpid()}"


def _service(var: str) -> str:
    value = os.environ.get(var, "")
    if not value:
        if os.environ.get("HCP_TEST_REQUIRE_SERVICES") == "1":
            pytest.fail(f"{var} is not set but HCP_TEST_REQUIRE_SERVICES=1")
        pytest.skip(f"{var} not set (run scripts/services.sh up)")
    return value


@pytest.fixture(scope="session")
def postgres_admin_url() -> str:
    return _service("HCP_TEST_POSTGRES_URL")


@pytest.fixture(scope="session")
def kafka_bootstrap() -> str:
    return _service("HCP_TEST_KAFKA_BOOTSTRAP")


@pytest.fixture(scope="session")
def redis_url() -> str:
    return _service("HCP_TEST_REDIS_URL")


@pytest.fixture(scope="session")
def postgres_template(postgres_admin_url: str) -> Iterator[str]:
    """A database migrated to head once per session; each test clones it (fast)."""
    admin = make_engine(postgres_admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {TEMPLATE_DB} WITH (FORCE)"))
        conn.execute(text(f"CREATE DATABASE {TEMPLATE_DB}"))
    url = make_url(postgres_admin_url).set(database=TEMPLATE_DB).render_as_string(hide_password=False)
    migrate.upgrade(url)
    yield url
    with admin.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {TEMPLATE_DB} WITH (FORCE)"))
    admin.dispose()


@pytest.fixture
def postgres_url(postgres_admin_url: str, postgres_template: str) -> Iterator[str]:
    name = f"hcp_t_{uuid.uuid4().hex[:12]}"
    admin = make_engine(postgres_admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE_DB}"))
    yield make_url(postgres_admin_url).set(database=name).render_as_string(hide_password=False)
    with admin.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    admin.dispose()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.sqlite3"
    migrate.upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture
def sqlite_url(sqlite_template: Path, tmp_path: Path) -> str:
    path = tmp_path / "hcp.sqlite3"
    path.write_bytes(sqlite_template.read_bytes())
    return f"sqlite:///{path}"


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str:
    """Every test that takes this runs once per backend: the shared port test suite."""
    return str(request.getfixturevalue(f"{request.param}_url"))


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    eng = make_engine(database_url)
    yield eng
    eng.dispose()
