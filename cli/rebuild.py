"""`hcp rebuild`: every projected table replayed from the log, compared or written back."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from cli.errors import CHECK_FAILED, USAGE

if TYPE_CHECKING:
    from events.projections.rebuild import Rebuilder, RebuildReport

TABLE_HELP = "Only this projected table (repeatable); default: every one"


def rebuild(table: list[str] = typer.Option(None, "--table", help=TABLE_HELP),
            check: bool = typer.Option(False, "--check", help="Only compare: name each differing, "
                                       "missing or extra row; exit 1 if there is one"),
            catch_up: bool = typer.Option(False, "--catch-up", help=(
                "With --table: bring a projection added to a running server up to the log's head "
                "from its stored position, a page of its own events per transaction (resumable)")),
            page: int = typer.Option(500, min=1, max=100_000, help="With --catch-up: events per transaction"),
            as_json: bool = typer.Option(False, "--json", help="The report as JSON")) -> None:
    """Replay the log into every projection: a dropped table comes back, altered rows are
    rewritten (or, with --check, only named)."""
    from cli.common import cli_container
    from events.projections.rebuild import UnknownTable

    if catch_up and (check or not table):
        typer.echo("error: --catch-up needs --table and goes without --check", err=True)
        raise typer.Exit(USAGE)
    with cli_container() as c:
        try:
            if catch_up:
                _catch_up(c.rebuilder, table, page, as_json)
                return
            report = (c.rebuilder.check(table or None) if check
                      else c.rebuilder.rebuild(table or None))
        except UnknownTable as exc:
            typer.echo(f"error: --table: {exc}", err=True)
            raise typer.Exit(USAGE) from None
    _emit(report, check, as_json)


def _catch_up(rebuilder: Rebuilder, tables: list[str], page: int, as_json: bool) -> None:
    from events.projections.catchup import CatchUpError

    done = []
    for name in tables:
        try:
            done.append(rebuilder.catch_up(name, page))
        except CatchUpError as exc:
            typer.echo(f"UNPROJECTABLE {exc}", err=True)
            raise typer.Exit(CHECK_FAILED) from None
    if as_json:
        typer.echo(json.dumps([d.__dict__ for d in done], indent=2))
        return
    for d in done:
        rate = d.events / d.seconds if d.seconds else 0.0
        typer.echo(f"caught up {d.table} from position {d.started_at} to {d.position}: {d.events} event(s) "
                   f"in {d.pages} page(s), {d.inserted} row(s) inserted, {d.present} already there, "
                   f"{d.updated} update(s); {d.seconds:.1f} s ({rate:,.0f} events/s)")


def _emit(report: RebuildReport, check: bool, as_json: bool) -> None:
    differences = [d for c in report.checks for d in c.differences]
    broken_log = any(d.kind == "unprojectable" for d in differences)
    if as_json:
        typer.echo(json.dumps({
            "ok": report.ok, "checked_only": check,
            "tables": [{"table": c.table, "rows": c.rows, "bounded": dict(c.bounded),
                        "differences": [d.to_json() for d in c.differences]} for c in report.checks],
            "rebuilt": [r.__dict__ for r in report.rebuilt]}, indent=2))
    else:
        for d in differences:
            typer.echo(f"{d.kind.upper()} {d.line()}")
        for r in report.rebuilt:
            if r.created or r.inserted or r.updated or r.deleted:
                typer.echo(f"rebuilt {r.table}: {'created, ' if r.created else ''}{r.inserted} inserted, "
                           f"{r.updated} rewritten, {r.deleted} deleted")
        rows = sum(c.rows for c in report.checks)
        verdict = "every row is what the log says" if report.ok else f"{len(differences)} difference(s)"
        typer.echo(f"{len(report.checks)} projection(s), {rows} row(s): {verdict}"
                   + ("" if check or report.ok or broken_log else "; rebuilt from the log"))
    if broken_log or (check and not report.ok):
        raise typer.Exit(CHECK_FAILED)


def register(app: typer.Typer) -> None:
    app.command()(rebuild)
