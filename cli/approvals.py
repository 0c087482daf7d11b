"""`hcp alias protect|unprotect|request|requests|approve|reject`: protected aliases."""

from __future__ import annotations

import typer

from cli.common import cli_container
from cli.output import JsonOpt, cli_actor, console, print_json, print_json_lines, print_table, table
from cli.registry import alias_app


def protect(specialist: str, alias: str, reason: str = typer.Option(...)) -> None:
    """Require a second person's approval to move ALIAS of SPECIALIST."""
    with cli_container() as parts:
        print_json(parts.approvals.protect(specialist, alias, True, cli_actor(), reason))


def unprotect(specialist: str, alias: str, reason: str = typer.Option(...)) -> None:
    """Let ALIAS move without approval again."""
    with cli_container() as parts:
        print_json(parts.approvals.protect(specialist, alias, False, cli_actor(), reason))


def request(specialist: str, alias: str,
            adapter_id: str = typer.Argument(None, help="Target; omit with --rollback"),
            rollback: bool = typer.Option(False, help="Request a rollback"),
            reason: str = typer.Option(...)) -> None:
    """Ask for a move of a protected alias; someone else approves it."""
    with cli_container() as parts:
        made = parts.approvals.request(specialist, alias, adapter_id, cli_actor(), reason, rollback)
    console().print(f"requested {made.kind} of {specialist}/{alias} to {made.adapter_id}: "
                    f"request {made.request_id}")


def requests(specialist: str = typer.Option(None, "--specialist", "-s"),
             as_json: bool = JsonOpt) -> None:
    """Requests waiting for a decision."""
    with cli_container() as parts:
        pending = parts.approvals.pending(specialist)
    if as_json:
        print_json_lines(r.to_json() for r in pending)
        return
    shown = table("request", "alias", "kind", "to", "from", "by", "reason")
    for r in pending:
        shown.add_row(r.request_id, f"{r.specialist}/{r.alias}", r.kind, r.adapter_id or "-",
                      r.expected_current or "-", r.requested_by, r.reason)
    print_table(shown)


def approve(request_id: str, reason: str = typer.Option("")) -> None:
    """Approve a request (not your own): the alias moves."""
    with cli_container() as parts:
        print_json(parts.approvals.approve(request_id, cli_actor(), reason).to_json())


def reject(request_id: str, reason: str = typer.Option("")) -> None:
    """Turn a request down."""
    with cli_container() as parts:
        print_json(parts.approvals.reject(request_id, cli_actor(), reason).to_json())


def register(app: typer.Typer) -> None:
    for command in (protect, unprotect, request, requests, approve, reject):
        alias_app.command(command.__name__)(command)
