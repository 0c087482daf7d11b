"""`hcp contract …`: write, validate, publish and compare HCP contract versions."""

from __future__ import annotations

import getpass
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer

from cli.common import cli_container
from contract.diff import diff_contracts
from contract.document import ContractInvalid, contract_json_schema, parse_contract
from contract.versions import PUBLISHED, ContractVersions

app = typer.Typer(help="HCP contracts: versions, drafts, publishing, diff, dry-run",
                  no_args_is_help=True)
T = TypeVar("T")
ActorOpt = typer.Option(None, help="Who makes the change (default: the OS user)")


def _with_service(action: Callable[[ContractVersions], T]) -> T:
    with cli_container() as container:
        return action(container.contracts)


def _actor(actor: str | None) -> str:
    return actor or f"user:{getpass.getuser()}"


def _print(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, default=str))


@app.command()
def new(name: str, file: Path = typer.Option(..., "--file", "-f", exists=True),
        actor: str = ActorOpt) -> None:
    """Create a draft of contract NAME from a TOML file."""
    draft = _with_service(lambda s: s.create_draft(name, file.read_text(), _actor(actor)))
    typer.echo(f"draft {draft.ref} created ({draft.content_hash[:12]})")


@app.command()
def edit(name: str, version: int, file: Path = typer.Option(..., "--file", "-f", exists=True),
         actor: str = ActorOpt) -> None:
    """Replace a draft's document; for a published VERSION, start a new draft from it."""

    def run(service: ContractVersions) -> str:
        current = service.get(name, version)
        if current.status == "draft":
            return f"draft {service.edit_draft(name, version, file.read_text(), _actor(actor)).ref} updated"
        draft = service.create_draft(name, file.read_text(), _actor(actor), parent_version=version)
        return f"{current.ref} is {current.status}: new draft {draft.ref} created from it"

    typer.echo(_with_service(run))


@app.command()
def validate(file: Path = typer.Option(..., "--file", "-f", exists=True)) -> None:
    """Compile a document; list every problem and exit 2 when there are any."""
    try:
        parse_contract(file.read_text())
    except ContractInvalid as exc:
        for problem in exc.problems:
            typer.echo(f"error: {problem}", err=True)
        raise typer.Exit(2) from None
    typer.echo("valid")


@app.command()
def publish(name: str, version: int, actor: str = ActorOpt,
            force: bool = typer.Option(False, help="Publish although the check fails"),
            reason: str = typer.Option("", help="Why it is forced (recorded in the event)")) -> None:
    """Dry-run a draft on recent history, then freeze it and make it score (history is
    then re-scored under it); refused (exit 2) when it errors above the threshold."""
    with cli_container() as container:
        done, check = container.publisher.publish(name, version, _actor(actor), force, reason)
    if check is not None:
        typer.echo(f"check: {check.describe()}{'' if check.passed else ' (forced)'}")
    typer.echo(f"published {done.ref} ({done.content_hash})")


@app.command()
def retire(name: str, version: int, reason: str = "", actor: str = ActorOpt) -> None:
    """Stop scoring new subjects under a published version."""
    done = _with_service(lambda s: s.retire(name, version, _actor(actor), reason))
    typer.echo(f"retired {done.ref}")


@app.command("list")
def list_versions(name: str = typer.Argument(None)) -> None:
    """Every version: status, hash, who created and published it."""
    for v in _with_service(lambda s: s.versions(name)):
        mark = "*" if v.status == PUBLISHED else " "
        typer.echo(f"{mark} {v.ref:<24} {v.status:<10} {v.content_hash[:12]}  by {v.created_by}"
                   f"{f'  published by {v.published_by}' if v.published_by else ''}")


@app.command()
def show(name: str, version: int) -> None:
    """Print a version's TOML document."""
    typer.echo(_with_service(lambda s: s.get(name, version)).document)


@app.command()
def history(name: str) -> None:
    """Who changed what and when, from the log."""
    for e in _with_service(lambda s: s.history(name)):
        typer.echo(f"{e.recorded_at:%Y-%m-%d %H:%M:%S}  {e.type:<24} v{e.payload.get('version')}  "
                   f"{e.metadata.actor}  (position {e.position})")


@app.command()
def diff(name: str, a: int, b: int, as_json: bool = typer.Option(False, "--json")) -> None:
    """What changed in meaning from version A to version B."""
    result = _with_service(lambda s: diff_contracts(s.get(name, a).parsed(), s.get(name, b).parsed()))
    if as_json:
        _print(result.to_json())
    else:
        typer.echo(result.render())


@app.command()
def schema() -> None:
    """Print the JSON Schema of a contract document."""
    _print(contract_json_schema())


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="contract")
