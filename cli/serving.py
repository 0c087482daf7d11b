"""`hcp contract serve|serving|harness`: which version a harness runs, and its configuration."""

from __future__ import annotations

import getpass
from datetime import datetime

import typer

from cli.common import cli_container
from cli.output import JsonOpt, print_json
from cli.times import at_option


def serve(name: str, version: int,
          specialist: str = typer.Option(None, "--specialist", "-s",
                                         help="One slot; default every slot the version declares"),
          reason: str = typer.Option(..., help="Recorded in the contract.serving_moved event"),
          actor: str = typer.Option(None, help="Who makes the change (default: the OS user)")) -> None:
    """Make published VERSION the one a harness runs (for one specialist, or all)."""
    with cli_container() as container:
        moves = container.serving.move(name, specialist, version,
                                       actor or f"user:{getpass.getuser()}", reason)
    for move in moves:
        was = f"{name}@{move.previous_version}" if move.previous_version else "nothing"
        typer.echo(f"{move.specialist}: {move.ref} serves (was {was})")


def serving(name: str, at: datetime = at_option("Which versions served then"),
            as_json: bool = JsonOpt) -> None:
    """Which version serves each specialist, and which versions score."""
    with cli_container() as container:
        state = container.serving.state(name, at)
    scoring = state.scoring
    if as_json:
        print_json({"name": name, "at": at, "scoring": scoring,
                    "serving": {s: move.to_json() for s, move in state.serving.items()}})
        return
    for specialist, move in state.serving.items():
        typer.echo(f"{specialist:<12} {move.ref:<16} since {move.moved_at:%Y-%m-%d %H:%M:%S}  "
                   f"by {move.actor}: {move.reason}")
    typer.echo(f"scoring: {', '.join(f'{name}@{v}' for v in scoring) or 'none'}")


def harness(name: str, specialist: str, at: datetime = at_option("The configuration then"),
            if_none_match: str = typer.Option(None, "--if-none-match",
                                              help="The config_hash last seen: print nothing "
                                              "and exit 0 if it is unchanged"),
            _json: bool = typer.Option(False, "--json", help="Accepted for uniformity: the "
                                       "configuration is a JSON document in either form")) -> None:
    """The harness configuration to run for SPECIALIST now, as JSON (version, hash, alias,
    router, tools, hooks, prompts, skills): a harness reads it, so JSON is its only form."""
    from contract.harness_config import etag_matches

    with cli_container() as container:
        body = container.serving.harness(name, specialist, at)
    if etag_matches(if_none_match, body["config_hash"]):
        typer.echo("not modified", err=True)
        return
    print_json(body)


def register(app: typer.Typer) -> None:
    from cli import contract as contract_cli

    contract_cli.app.command("serve")(serve)
    contract_cli.app.command("serving")(serving)
    contract_cli.app.command("harness")(harness)
