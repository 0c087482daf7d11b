"""`hcp contract …`: write, validate, publish and compare HCP contract versions."""

from __future__ import annotations

import getpass
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from cli.common import cli_container
from cli.confirm import YesOpt, confirm
from cli.output import JsonOpt, command_group, print_json, print_json_lines

if TYPE_CHECKING:
    from contract.versions import ContractVersion, ContractVersions

app = command_group("HCP contracts: versions, drafts, publishing, diff, dry-run")
T = TypeVar("T")
ActorOpt = typer.Option(None, help="Who makes the change (default: the OS user)")


def _with_service(action: Callable[[ContractVersions], T]) -> T:
    with cli_container() as container:
        return action(container.contracts)


def _actor(actor: str | None) -> str:
    return actor or f"user:{getpass.getuser()}"


def _version_json(v: ContractVersion, document: bool = False) -> dict[str, Any]:
    return {**v.summary(), **({"document": v.document} if document else {})}


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
def validate(file: Path = typer.Option(..., "--file", "-f", exists=True),
             as_json: bool = JsonOpt) -> None:
    """Compile a document; list every problem and exit 2 when there are any."""
    from contract.document import parse_contract

    parse_contract(file.read_text())  # ContractInvalid: every problem, exit 2 (cli/errors.py)
    if as_json:
        print_json({"valid": True, "file": str(file)})
    else:
        typer.echo("valid")


@app.command()
def publish(name: str, version: int, actor: str = ActorOpt,
            force: bool = typer.Option(False, help="Publish although the check fails"),
            reason: str = typer.Option("", help="Why it is forced (recorded in the event)"),
            yes: bool = YesOpt) -> None:
    """Dry-run a draft on recent history, then freeze it and make it score (history is
    then re-scored under it); refused (exit 4) when it errors above the threshold. Says
    first what will follow (scoring, serving, training) and asks on a terminal."""
    from cli.publish_notice import publish_notice

    with cli_container() as container:
        confirm(publish_notice(container, name, version), f"Publish {name}@{version}?", yes)
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
def list_versions(name: str = typer.Argument(None), as_json: bool = JsonOpt) -> None:
    """Every version: status, hash, who created and published it (* marks published)."""
    versions = _with_service(lambda s: s.versions(name))
    if as_json:
        print_json_lines(_version_json(v) for v in versions)
        return
    for v in versions:
        mark = "*" if v.status == "published" else " "
        typer.echo(f"{mark} {v.ref:<24} {v.status:<10} {v.content_hash[:12]}  by {v.created_by}"
                   f"{f'  published by {v.published_by}' if v.published_by else ''}")


@app.command()
def show(name: str, version: int,
         as_json: bool = typer.Option(False, "--json", help="The version's record, document "
                                      "included, as JSON")) -> None:
    """Print a version's TOML document."""
    found = _with_service(lambda s: s.get(name, version))
    if as_json:
        print_json(_version_json(found, document=True))
    else:
        typer.echo(found.document)


@app.command()
def history(name: str, as_json: bool = typer.Option(False, "--json", help="The events, one "
                                                    "JSON object per line")) -> None:
    """Who changed what and when, from the log."""
    events = _with_service(lambda s: s.history(name))
    if as_json:
        print_json_lines(e.to_json() for e in events)
        return
    for e in events:
        typer.echo(f"{e.recorded_at:%Y-%m-%d %H:%M:%S}  {e.type:<24} v{e.payload.get('version')}  "
                   f"{e.metadata.actor}  (position {e.position})")


@app.command()
def diff(name: str, a: int, b: int, as_json: bool = JsonOpt) -> None:
    """What changed in meaning from version A to version B."""
    from contract.diff import diff_contracts

    result = _with_service(lambda s: diff_contracts(s.get(name, a).parsed(), s.get(name, b).parsed()))
    if as_json:
        print_json(result.to_json())
    else:
        typer.echo(result.render())


@app.command()
def schema(_json: bool = typer.Option(False, "--json", help="Accepted for uniformity: the "
                                      "schema is a JSON document in either form")) -> None:
    """Print the JSON Schema of a contract document (JSON is its only form)."""
    from contract.document import contract_json_schema

    print_json(contract_json_schema())


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="contract")
