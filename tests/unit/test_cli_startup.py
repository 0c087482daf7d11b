"""`hcp --help` stays fast because nothing of the server is imported to print it.

How long it takes is measured by bench/cli_startup.py; this holds the reason it is fast:
the modules a help page loads (a test of imports, not of seconds).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# What a help page must not pull in: the composition root and every service behind it,
# the database driver and the libraries of the workers.
SERVER = ("hcp.bootstrap", "hcp.services", "hcp.migrate", "sqlalchemy", "alembic", "psycopg",
          "kafka", "celery", "torch", "fastapi", "pydantic_settings", "events.store", "contract.versions",
          "audit.auditor", "trainer.registry.registry")

PROBE = """
import json, sys
from cli.main import app
try:
    app(sys.argv[1:], prog_name="hcp")
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


@pytest.mark.parametrize("args", [["--help"], ["contract", "--help"], ["audit", "checkpoint", "--help"],
                                  ["lineage", "as-of", "--help"], ["verify", "--help"],
                                  ["serve", "--help"]])
def test_a_help_page_imports_nothing_of_the_server(args: list[str]) -> None:
    run = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True,
                         timeout=120, check=True)
    report = json.loads(run.stdout.splitlines()[-1])
    assert report["code"] == 0
    loaded = [m for m in report["modules"] if m.startswith(SERVER)]
    assert loaded == [], f"`hcp {' '.join(args)}` imported {loaded}"


def test_the_evaluators_defaults_spelt_out_in_the_cli_are_the_services_own() -> None:
    from cli import evaluator
    from evaluators.evaluator import DEFAULT_BATCH
    from hcp.services import DEFAULT_GROUP

    assert (evaluator.DEFAULT_GROUP, evaluator.DEFAULT_BATCH) == (DEFAULT_GROUP, DEFAULT_BATCH)
