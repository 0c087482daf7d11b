"""A generated block of a docs page, between two marker comments: read it, or rewrite it.

Shared by the scripts that generate tables into docs (settings_table.py, audit_table.py):
each gives its page, markers and the block it wants; ``--check`` exits 1 when the page
is out of date, so a test or CI can hold the page to the code.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def current(text: str, start: str, end: str) -> str:
    """The block as the page has it now (markers included), or '' without markers."""
    if start not in text or end not in text:
        return ""
    return text[text.index(start):text.index(end) + len(end)]


def fill(page: Path, start: str, end: str, wanted: str, script: str, description: str) -> int:
    """Rewrite the block of ``page`` to ``wanted`` (or, with --check, say it differs)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is out of date")
    args = parser.parse_args()
    text = page.read_text()
    found = current(text, start, end)
    if not found:
        print(f"{page}: no {start!r} ... {end!r} block to fill", file=sys.stderr)
        return 1
    if found == wanted:
        return 0
    if args.check:
        print(f"{page.name} is out of date: run {script}", file=sys.stderr)
        return 1
    page.write_text(text.replace(found, wanted))
    print(f"wrote {page}")
    return 0
