"""`hcp adapters|alias|base-models …`: the adapter registry, its aliases and base models."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from cli.common import cli_container
from cli.confirm import YesOpt, confirm
from cli.errors import CHECK_FAILED
from cli.output import (
    JsonOpt,
    cli_actor,
    command_group,
    console,
    print_fields,
    print_json,
    print_json_lines,
    print_table,
    table,
)
from cli.times import at_option

if TYPE_CHECKING:
    from trainer.registry.model import AdapterVersion

adapters_app = command_group("Adapter versions: list, inspect, lineage, promote")
alias_app = command_group("Aliases (production, staging, …) per specialist")
base_app = command_group("Base models the adapters are trained on")


# --- adapters ----------------------------------------------------------------------

@adapters_app.command("list")
def adapters_list(specialist: str = typer.Option(None, "--specialist", "-s"),
                  as_json: bool = JsonOpt) -> None:
    """Adapter versions, newest first, with status and parent."""
    with cli_container() as parts:
        adapters = parts.registry.adapters(specialist)
    if as_json:
        print_json_lines(a.to_json() for a in adapters)
        return
    shown = table("adapter", "parent", "base", "status", "artifact", "registered")
    for a in adapters:
        shown.add_row(a.adapter_id, a.parent_adapter_id or "root", a.base_model, a.status,
                      a.artifact_sha256[:12], a.registered_at.isoformat(timespec="seconds"))
    print_table(shown)


@adapters_app.command("show")
def adapters_show(adapter_id: str, as_json: bool = JsonOpt) -> None:
    """Every field of a version: lineage references, hyper-parameters, metrics; first what
    its gate decided: the test, the interval, the sample count and the seed."""
    from trainer.gate.record import with_gate_summary

    with cli_container() as parts:
        adapter = parts.registry.adapter(adapter_id)
    # The gate's per-case answers stay behind GET /v1/adapters/{id}/gate/samples, as in the API.
    shown = with_gate_summary(adapter.to_json())
    if as_json:
        print_json(shown)
        return
    for line in gate_summary((shown.get("metrics") or {}).get("gate") or {}):
        typer.echo(line)
    print_fields(shown, title=f"adapter {adapter.adapter_id}")


def gate_summary(gate: dict[str, Any]) -> list[str]:
    """The gate record in a few lines (empty: no gate record)."""
    if not gate:
        return []
    verdict = "promote" if gate.get("promote") else "do not promote"
    lines = [f"gate: {verdict} ({gate.get('metric', 'offline')} metric, test "
             f"{gate.get('test', 'margin')})"]
    rewards = (gate.get("comparison") or {}).get("rollout_reward")
    if rewards:
        lines.append(f"  held-out reward: parent {rewards['parent']:.4f} -> successor "
                     f"{rewards['successor']:.4f} (delta {rewards['delta']:+.4f})")
    interval = gate.get("interval")
    if interval:
        lines.append(f"  paired bootstrap {interval['level']:.0%} interval [{interval['low']:+.4f}, "
                     f"{interval['high']:+.4f}], n={interval['n']}, {interval['resamples']} "
                     f"resamples, seed {interval['seed']}")
    sign = gate.get("sign_test")
    if sign:
        lines.append(f"  sign test: {sign['wins']} wins, {sign['losses']} losses, {sign['ties']} "
                     f"ties, p={sign['p_value']:.3g}")
    lines.append(f"  reason: {gate.get('reason', '')}")
    return lines


@adapters_app.command("lineage")
def adapters_lineage(adapter_id: str,
                     deep: bool = typer.Option(False, help="Rebuild data, hash base"),
                     as_json: bool = JsonOpt) -> None:
    """The chain back to the root, each link verified; exit 1 if any check fails."""
    with cli_container() as parts:
        chain = parts.lineage.chain(adapter_id, deep)
    if as_json:
        print_json(chain)
    else:
        for link in chain:
            checks = {"manifest": link["manifest"]["verified"], "data rebuilt": link["manifest"]["rebuilt"],
                      "artifact": link["artifact"]["verified"], "base": link["base_model"]["verified"]}
            said = ", ".join(f"{name} {'ok' if ok else 'FAILED'}" for name, ok in checks.items()
                             if ok is not None)
            note = f" ({link['artifact']['note']})" if link["artifact"]["note"] else ""
            typer.echo(f"{'verified' if link['verified'] else 'NOT VERIFIED'}  {link['adapter_id']} "
                       f"<- {link['parent_adapter_id'] or 'root'}: {said}{note}")
    if not all(link["verified"] for link in chain):
        raise typer.Exit(CHECK_FAILED)


@adapters_app.command("promote")
def adapters_promote(adapter_id: str, reason: str = typer.Option(...),
                     alias: str = typer.Option("production")) -> None:
    """Promote by hand and move ALIAS to it."""
    with cli_container() as parts:
        print_json(parts.registry.set_status(adapter_id, "promoted", cli_actor(), reason, alias).to_json())


@adapters_app.command("reject")
def adapters_reject(adapter_id: str, reason: str = typer.Option(...)) -> None:
    """Mark a version rejected."""
    with cli_container() as parts:
        print_json(parts.registry.set_status(adapter_id, "rejected", cli_actor(), reason).to_json())


# --- alias -------------------------------------------------------------------------

@alias_app.command("set")
def alias_set(specialist: str, alias: str, adapter_id: str, reason: str = typer.Option(...),
              yes: bool = YesOpt) -> None:
    """Point ALIAS of SPECIALIST at ADAPTER_ID (an alias.moved event); a rejected version
    is named as such and asked about first (--yes: not asked)."""
    with cli_container() as parts:
        target = parts.registry.adapter(adapter_id)
        if target.status == "rejected":
            confirm(rejected_notice(target, specialist, alias),
                    f"Point {specialist}/{alias} at {adapter_id} anyway?", yes,
                    refuse_unasked=f"{adapter_id} was rejected")
        print_json(parts.aliases.move(specialist, alias, adapter_id, cli_actor(), reason).to_json())


def rejected_notice(target: AdapterVersion, specialist: str, alias: str) -> list[str]:
    """What the console's confirmation page says of a rejected version, for the terminal."""
    from console.views.gate import rounded

    gate = target.metrics.get("gate") or {}
    by = "its gate" if target.registered_status == "rejected" else "hand, after registration"
    why = f": {rounded(gate['reason'])}" if target.registered_status == "rejected" and \
        gate.get("reason") else ""
    return [f"warning: {target.adapter_id} was rejected by {by}{why}",
            f"warning: {specialist}/{alias} would serve it to every request that alias answers"]


@alias_app.command("rollback")
def alias_rollback(specialist: str, alias: str, reason: str = typer.Option(...)) -> None:
    """Move ALIAS back to its latest earlier target that was not itself rolled back from."""
    with cli_container() as parts:
        move = parts.aliases.rollback(specialist, alias, cli_actor(), reason)
    console().print(f"rolled {specialist}/{alias} back from {move.previous_adapter_id} to "
                    f"{move.adapter_id}; {move.previous_adapter_id} is now rolled_back")


@alias_app.command("at")
def alias_at(specialist: str, alias: str, at: datetime = at_option("Where it pointed then"),
             as_json: bool = JsonOpt) -> None:
    """Where ALIAS pointed at a time (`--at 2h`, `--at 2026-12-01T09:00`; default now)."""
    with cli_container() as parts:
        move = parts.aliases.at(specialist, alias, at)
    if as_json:
        print_json({"specialist": specialist, "alias": alias, "at": at,
                    "adapter_id": move.adapter_id if move else None,
                    "move": move.to_json() if move else None})
        return
    typer.echo(move.adapter_id if move and move.adapter_id else "(unset)")


@alias_app.command("history")
def alias_history(specialist: str, alias: str = typer.Argument(None),
                  as_json: bool = JsonOpt) -> None:
    """Moves, newest first: when, who, from, to, why."""
    with cli_container() as parts:
        moves = parts.aliases.history(specialist, alias)
    if as_json:
        print_json_lines(m.to_json() for m in moves)
        return
    shown = table("moved at", "alias", "from", "to", "actor", "reason")
    for m in moves:
        shown.add_row(m.moved_at.isoformat(timespec="seconds"), m.alias,
                      m.previous_adapter_id or "-", m.adapter_id or "-", m.actor, m.reason)
    print_table(shown)


@alias_app.command("resolve")
def alias_resolve(specialist: str, alias: str = typer.Argument("production"),
                  as_json: bool = JsonOpt) -> None:
    """What a server loads: adapter version, artifact location and sha256, base model."""
    from inference.names import ModelRef

    with cli_container() as parts:
        resolved = parts.resolver.resolve(ModelRef("slot", specialist), alias).to_json()
    if as_json:
        print_json(resolved)
    else:
        print_fields(resolved, title=f"{specialist}/{alias} -> {resolved['adapter_id']}")


# --- base models -------------------------------------------------------------------

@base_app.command("register")
def base_register(path: Path, name: str = typer.Option(..., "--name", "-n")) -> None:
    """Register a local model directory (hashes its weight files)."""
    with cli_container() as parts:
        # Resolved against the working directory here: the registry reads a relative path
        # as one under the models root, which a path typed at a shell is not.
        print_json(parts.registry.register_base_model(name, path.resolve(), cli_actor()).to_json())


@base_app.command("build-tiny")
def base_build_tiny(name: str = typer.Option("tiny", "--name", "-n"),
                    directory: Path = typer.Option(None, "--dir", help="Default <data_dir>/models/NAME"),
                    seed: int = typer.Option(0)) -> None:
    """Build the tiny local causal LM (no download) and register it."""
    from hcp.settings import get_settings
    from trainer.ml.tiny_model import build_tiny_base_model

    target = directory.resolve() if directory else get_settings().resolved_models_dir / name
    path = build_tiny_base_model(target, seed=seed)
    with cli_container() as parts:
        print_json(parts.registry.register_base_model(name, path, cli_actor()).to_json())


@base_app.command("list")
def base_list(as_json: bool = JsonOpt) -> None:
    """Registered base models."""
    with cli_container() as parts:
        models = parts.registry.base_models()
    if as_json:
        print_json_lines(b.to_json() for b in models)
        return
    shown = table("name", "weights sha256", "path", "registered")
    for b in models:
        shown.add_row(b.name, b.weights_sha256[:16], b.path, b.registered_at.isoformat(timespec="seconds"))
    print_table(shown)


def register(app: typer.Typer) -> None:
    from cli.base_models import fetch

    base_app.command("fetch")(fetch)
    app.add_typer(adapters_app, name="adapters")
    app.add_typer(alias_app, name="alias")
    app.add_typer(base_app, name="base-models")
