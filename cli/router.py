"""`hcp router …`: the learned router of a contract (docs/serving.md): train one from the
log, list its versions, promote one (or roll back)."""

from __future__ import annotations

import typer

from cli.common import cli_container
from cli.output import JsonOpt, cli_actor, command_group, print_json, print_json_lines

app = command_group("The learned router: train from the log, list versions, promote")
ContractOpt = typer.Option(None, "--contract", "-c",
                           help="The contract whose router it is (default HCP_SERVING_CONTRACT)")


@app.command("train")
def train(contract: str = ContractOpt,
          min_reward: float = typer.Option(0.5, help="A routed turn rewarded at least this "
                                           "teaches that its specialist was right"),
          margin: float = typer.Option(0.05, help="The gate's non-inferiority margin against "
                                       "the router serving now"),
          min_held_out: int = typer.Option(20, help="Fewest held-out turns the gate judges on"),
          device: str = typer.Option(None, help="Where the base model reads the turns (cpu, cuda)"),
          actor: str = typer.Option(None, help="Who trains it (default: the OS user)"),
          as_json: bool = JsonOpt) -> None:
    """Train a router on the log's turns whose specialist is known, gate it on the held-out
    ones against the router serving now, register it, and promote it if the gate passes."""
    from harness.routing.training import RouterOptions
    from hcp.serving_root import build_router_trainer

    with cli_container() as container:
        name = contract or container.settings.serving_contract
        trained = build_router_trainer(container, device).train(
            name, actor or cli_actor(), RouterOptions(min_reward, margin, min_held_out))
    registered = trained.version.registered
    if as_json:
        print_json({"router": trained.version.ref, "promoted": trained.promoted,
                    **registered.payload()})
        return
    typer.echo(f"{trained.version.ref}: {registered.examples['train']} train and "
               f"{registered.examples['held_out']} held-out turns, artifact "
               f"sha256:{registered.artifact_sha256[:16]}…")
    typer.echo(f"gate: {trained.gate.reason}")
    typer.echo("promoted: it routes auto turns now" if trained.promoted else
               "not promoted: the router serving now stays")


@app.command("list")
def list_versions(contract: str = ContractOpt, as_json: bool = JsonOpt) -> None:
    """The contract's router versions, and which one serves (marked *)."""
    from harness.routing.events import RouterVersions

    with cli_container() as container:
        name = contract or container.settings.serving_contract
        routers = RouterVersions(container.store)
        versions, serving = routers.versions(name), routers.production(name)
    if as_json:
        print_json_lines({"router": v.ref, "serving": serving is not None and serving.ref == v.ref,
                          **v.registered.payload()} for v in versions)
        return
    for v in versions:
        r = v.registered
        mark = "*" if serving and serving.ref == v.ref else " "
        typer.echo(f"{mark} {v.ref:<20} accuracy {r.gate.get('accuracy', 0):.3f} on "
                   f"{r.gate.get('n', 0)} held-out (vs {r.gate.get('incumbent')} "
                   f"{r.gate.get('incumbent_accuracy', 0):.3f})  promote={r.gate.get('promote')}")
    if not versions:
        typer.echo(f"contract '{name}' has no learned router (hcp router train)")


@app.command("promote")
def promote(version: int, contract: str = ContractOpt,
            reason: str = typer.Option(..., help="Recorded in the router.promoted event"),
            actor: str = typer.Option(None, help="Who promotes it (default: the OS user)")) -> None:
    """Make VERSION the contract's serving router (a rollback is a promotion too)."""
    from harness.routing.events import RouterVersions

    with cli_container() as container:
        name = contract or container.settings.serving_contract
        moved = RouterVersions(container.store).promote(name, version, actor or cli_actor(), reason)
    was = f"{name}@{moved.previous_version}" if moved.previous_version else "none"
    typer.echo(f"{name}@{moved.version} routes (was {was})")
