"""Changes whose effect reaches past what the command names: say what will follow, then ask.

The notice goes to stderr. On a terminal the command asks, and only "y" or "yes" goes on
(git and apt ask so before what cannot be taken back); ``--yes`` skips the question but
not the notice. Off a terminal nobody can answer: a routine change goes ahead with its
notice, one that goes against a recorded verdict is refused (status 4) unless ``--yes``.
"""

from __future__ import annotations

import sys

import typer

from kernel.errors import Conflict

YesOpt = typer.Option(False, "--yes", "-y", help="Do not ask; what will follow is still printed")


class Declined(Conflict):
    """Not done: the person asked said no, or there was nobody to ask."""

    code = "declined"


def confirm(notice: list[str], question: str, yes: bool, refuse_unasked: str | None = None) -> None:
    """Print ``notice``; ask ``question`` on a terminal unless ``yes``. ``refuse_unasked``:
    why, off a terminal and without ``yes``, the change is refused rather than made."""
    for line in notice:
        typer.echo(line, err=True)
    if yes:
        return
    if sys.stdin.isatty():
        if not typer.confirm(question, default=False, err=True):
            raise Declined("nothing changed: the answer was no")
        return
    if refuse_unasked:
        raise Declined(f"{refuse_unasked}; nothing changed (no terminal to ask on: pass --yes)")
