"""docs/security.md's scope table names every scope a key can hold (webhooks:read and
webhooks:write were once missing from it)."""

from __future__ import annotations

import re

from access.principal import SCOPES
from tests.docs_pages import ROOT


def test_every_scope_has_a_row_in_the_scope_table() -> None:
    text = (ROOT / "docs" / "security.md").read_text()
    table = text.split("| scope | may | tenant keys |", 1)[1].split("\n\n", 1)[0]
    rows = {scope for line in table.splitlines() for scope in re.findall(r"^\| `([a-z:]+)`", line)}
    assert set(SCOPES) - {"admin"} <= rows, sorted(set(SCOPES) - {"admin"} - rows)
