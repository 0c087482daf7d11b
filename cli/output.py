"""How commands print: rich consoles sized for where the output goes, JSON in one form.

rich is imported on first use, not with the command modules: `hcp --help` never needs it
for a table.
"""

from __future__ import annotations

import getpass
import json
from collections.abc import Iterable
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

import typer

from kernel.clock import utc

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

# A console that is not a terminal (a pipe, a file, a test) has no width of its own, and
# rich would cut tables at 80 columns: what a script greps for is then split over lines.
PIPED_WIDTH = 4096

JsonOpt = typer.Option(False, "--json", help="JSON on stdout (errors as JSON on stderr)")


def console(stderr: bool = False) -> Console:
    """A console on stdout (or stderr): the terminal's width, or wide when piped."""
    from rich.console import Console

    made = Console(stderr=stderr)
    return made if made.is_terminal else Console(stderr=stderr, width=PIPED_WIDTH)


def progress_console() -> Console:
    """Where progress bars go: stderr, never mixed with what stdout carries (``--json``);
    at its own width, a bar being no table."""
    from rich.console import Console

    return Console(stderr=True)


def table(*columns: str, **options: Any) -> Table:
    from rich.table import Table

    return Table(*columns, **options)


def print_table(made: Table) -> None:
    console().print(made)


def print_json(data: Any) -> None:
    """One JSON document, indented (what a show command prints under ``--json``)."""
    typer.echo(json.dumps(data, indent=2, default=_plain))


def print_json_lines(items: Iterable[Any]) -> None:
    """One JSON object per line (what a list command prints under ``--json``)."""
    for item in items:
        typer.echo(json.dumps(item, default=_plain))


def _plain(value: Any) -> Any:
    """Times as ISO 8601 in UTC (as the API writes them; SQLite hands stored times back
    without their zone, which is UTC), anything else (ids, paths) as text."""
    if isinstance(value, datetime):
        return utc(value).isoformat()
    return value.isoformat() if isinstance(value, date) else str(value)


def cli_actor() -> str:
    """Who a change made from the command line is attributed to in the log."""
    return f"cli:{getpass.getuser()}"


def print_fields(data: dict[str, Any], title: str | None = None) -> None:
    """A record for people: ``key: value`` lines, nested records indented under their key
    (the human form of a show command whose ``--json`` form is that record)."""
    lines = [title] if title else []
    lines += _field_lines(data, "  " if title else "")
    typer.echo("\n".join(lines))


def _field_lines(data: dict[str, Any], indent: str) -> list[str]:
    lines: list[str] = []
    for key, value in data.items():
        if isinstance(value, dict) and value:
            lines.append(f"{indent}{key}:")
            lines += _field_lines(value, indent + "  ")
        elif isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
            lines.append(f"{indent}{key}:")
            for item in value:
                shown = _field_lines(item, indent + "    ") if isinstance(item, dict) else [
                    f"{indent}    {_scalar(item)}"]
                lines += [f"{indent}  - {shown[0].lstrip()}", *shown[1:]] if shown else []
        else:
            lines.append(f"{indent}{key}: {_scalar(value)}")
    return lines


def _scalar(value: Any) -> str:
    if value is None or value == {} or value == []:
        return "-"
    if isinstance(value, list):
        return ", ".join(_scalar(v) for v in value)
    if isinstance(value, datetime):
        return utc(value).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def command_group(help_text: str) -> typer.Typer:
    """A sub-command group: click's plain help pages (typer's rich panels import rich,
    markdown and pygments on every help page), and its help when called bare."""
    return typer.Typer(rich_markup_mode=None, help=help_text, no_args_is_help=True)
