"""`hcp triggers …`: the retraining policies, evaluated once or on a loop, and their firings."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import typer

from cli.common import cli_container
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

if TYPE_CHECKING:
    from hcp.bootstrap import Container

triggers_app = command_group("Trigger policies: evaluate once, or keep evaluating")


@triggers_app.command("evaluate")
def triggers_evaluate() -> None:
    """Evaluate every specialist's policy once; queue what is due (exactly once)."""
    with cli_container() as parts:
        _evaluate(parts)
        _join_in_process(parts)  # embedded: the runs train in this process


@triggers_app.command("run")
def triggers_run(interval: float = typer.Option(30.0, help="Seconds between evaluations"),
                 rounds: int = typer.Option(0, help="Stop after this many (0: never)")) -> None:
    """Keep evaluating the policies (and re-sending runs no worker holds)."""
    with cli_container() as parts:
        done = 0
        while rounds == 0 or done < rounds:
            _evaluate(parts)
            resent = parts.triggers.redispatch()
            if resent:
                console().print(f"re-sent {len(resent)} run(s) no worker held: {', '.join(resent)}")
            done += 1
            if rounds == 0 or done < rounds:
                time.sleep(interval)
        _join_in_process(parts)


def _join_in_process(parts: Container) -> None:
    from trainer.runs.dispatch import InProcessDispatcher

    if isinstance(parts.dispatcher, InProcessDispatcher):
        parts.dispatcher.join()


def _evaluate(parts: Container) -> None:
    out = console()
    for result in parts.triggers.evaluate(cli_actor()):
        mark = "[green]fired[/green]" if result.fired and result.fired.created else "-"
        run = f" run {result.fired.run_id}" if result.fired else ""
        out.print(f"{result.specialist:10} {mark} {result.note}{run}")


@triggers_app.command("show")
def triggers_show(specialist: str, as_json: bool = JsonOpt) -> None:
    """The effective policy, where it comes from, and the state it sees now."""
    from kernel.values import json_ready

    with cli_container() as parts:
        state = parts.triggers.state(specialist)
        shown: dict[str, Any] = {**parts.policies.effective(specialist).to_json(),
                                 "state": json_ready(dict(state.__dict__))}
    if as_json:
        print_json(shown)
    else:
        print_fields(shown, title=f"trigger policy of {specialist}")


@triggers_app.command("set")
def triggers_set(specialist: str, policy: str = typer.Argument(..., help="The policy as JSON")) -> None:
    """Configure a policy (overrides the contract's), e.g. '{"min_new_rewards": 50}'."""
    from contract.policy import TriggerPolicy

    parsed = TriggerPolicy.model_validate_json(policy)  # a ValidationError: exit 2, naming the field
    with cli_container() as parts:
        print_json(parts.policies.configure(specialist, parsed, cli_actor()).to_json())


@triggers_app.command("clear")
def triggers_clear(specialist: str, reason: str = typer.Option("", help="Recorded in the event")) -> None:
    """Drop the policy set with `triggers set`: the contract's is in force again."""
    with cli_container() as parts:
        print_json(parts.policies.clear(specialist, cli_actor(), reason).to_json())


@triggers_app.command("firings")
def triggers_firings(specialist: str = typer.Option(None, "--specialist", "-s"),
                     as_json: bool = JsonOpt) -> None:
    """Recent firings: policy, reason, parent, dataset cut, run."""
    with cli_container() as parts:
        firings = parts.triggers.firings(specialist)
    if as_json:
        print_json_lines(f.to_json() for f in firings)
        return
    shown = table("fired at", "specialist", "policy", "parent", "cut", "run", "reason")
    for f in firings:
        policy = f"{f.policy} #{f.rerun}" if f.rerun else f.policy
        shown.add_row(f.fired_at.isoformat(timespec="seconds"), f.specialist, policy,
                      f.parent_key, str(f.dataset_cut), f.run_id, f.reason)
    print_table(shown)


def register(app: typer.Typer) -> None:
    app.add_typer(triggers_app, name="triggers")
