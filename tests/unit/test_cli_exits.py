"""The CLI's exit statuses come from one table (cli/errors.py, EXIT_STATUSES): docs/cli.md's
table says the same, the root help is written from it, and no command exits with a bare
number of its own."""

from __future__ import annotations

import re

from cli.errors import EXIT_STATUSES
from cli.main import app
from tests.docs_pages import ROOT


def test_the_docs_table_is_the_code_table() -> None:
    text = (ROOT / "docs" / "cli.md").read_text()
    rows = re.findall(r"^\| (\d) \| ([^|]+) \|", text.split("## Exit status", 1)[1], re.M)
    assert [(int(n), meaning.strip()) for n, meaning in rows] == [
        (status, meaning) for status, _, meaning in EXIT_STATUSES]


def test_the_root_help_names_every_status() -> None:
    words = " ".join((app.info.help or "").split())
    for status, short, _ in EXIT_STATUSES:
        assert f"{status} {short}" in words


def test_no_command_exits_with_a_bare_number() -> None:
    for path in (ROOT / "cli").glob("*.py"):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            assert not re.search(r"typer\.Exit\(\d|sys\.exit\([1-9]", line), f"{path.name}:{number}"
