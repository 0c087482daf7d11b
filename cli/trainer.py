"""`hcp train|triggers …` and `hcp trainer` (the Celery worker); the registry commands
(`adapters`, `alias`, `base-models`) are in ``hcp/cli/registry.py``."""

from __future__ import annotations

import getpass
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from hcp.bootstrap import Container, bootstrap, celery_worker
from hcp.settings import get_settings
from kernel.errors import DomainError
from trainer.runs.dispatch import InProcessDispatcher
from trainer.runs.model import FAILED, SUCCEEDED, TrainingRun

train_app = typer.Typer(help="Training runs: start by hand, watch, retry", no_args_is_help=True)
triggers_app = typer.Typer(help="Trigger policies: evaluate once, or keep evaluating", no_args_is_help=True)
console = Console()


def cli_actor() -> str:
    return f"cli:{getpass.getuser()}"


@contextmanager
def cli_parts() -> Iterator[Container]:
    """A fresh container; refused requests (a domain error) become exit status 1."""
    container = bootstrap()
    try:
        yield container
    except DomainError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from None
    finally:
        container.close()


def print_json(data: Any) -> None:
    console.print_json(json.dumps(data, default=str))


# --- train -------------------------------------------------------------------------

@train_app.command("start")
def train_start(
    specialist: str = typer.Option(..., "--specialist", "-s"),
    parent: str = typer.Option(None, help="Parent adapter id, or 'root'; default: production"),
    base_model: str = typer.Option(None, help="Base model of a root version"),
    reason: str = typer.Option("", help="Recorded in the trigger.fired event"),
    follow: bool = typer.Option(True, help="Show progress until the run ends"),
    force: bool = typer.Option(False, help="A new run even on work already done (same parent "
                               "and data), with the current policy; needs --reason"),
    hyper: str = typer.Option(None, help="Hyper-parameter overrides as JSON, e.g. '{\"steps\": 20}'"),
) -> None:
    """Manual trigger: queue a run (or find the one already doing this work)."""
    overrides = _json_object(hyper, "--hyper") if hyper else {}
    with cli_parts() as parts:
        firing = parts.triggers.fire_manual(
            specialist, cli_actor(), reason or ("" if force else "manual trigger (CLI)"), parent,
            base_model, force, overrides)
        word = ("queued forced re-run" if firing.rerun and firing.created else
                "queued" if firing.created else "already fired as")
        console.print(f"{word} run {firing.run_id} ({specialist}, parent {firing.parent_key}, "
                      f"dataset cut {firing.dataset_cut})")
        # Embedded mode trains in a thread of this process: it must live until the run ends.
        if follow or not parts.settings.redis_url:
            _follow(parts, firing.run_id)


@train_app.command("status")
def train_status(
    run_id: str = typer.Argument(None, help="A run id; without it, the latest runs"),
    follow: bool = typer.Option(False, "--follow", "-f", help="Progress bar until the run ends"),
    specialist: str = typer.Option(None, "--specialist", "-s"),
) -> None:
    """A run's status (queued, running with step and loss, succeeded, failed with reason)."""
    with cli_parts() as parts:
        if run_id is None:
            _runs_table(parts.runs.recent(specialist, None, 20))
        elif follow:
            _follow(parts, run_id)
        else:
            print_json(parts.runs.get(run_id).to_json())


@train_app.command("retry")
def train_retry(run_id: str, reason: str = typer.Option("retry (CLI)"),
                follow: bool = typer.Option(True)) -> None:
    """Queue a failed run again."""
    with cli_parts() as parts:
        parts.runs.requeue(run_id, cli_actor(), reason)
        parts.dispatcher.dispatch(run_id)
        if follow or not parts.settings.redis_url:
            _follow(parts, run_id)


def _follow(parts: Container, run_id: str, poll: float = 0.5) -> None:
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[loss]}"), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        task = progress.add_task(run_id[:8], total=None, loss="")
        while True:
            run = parts.runs.get(run_id)
            loss = f"loss {run.last_loss:.4f}" if run.last_loss is not None else ""
            progress.update(task, description=f"{run_id[:8]} {run.status}", loss=loss,
                            completed=run.step, total=run.total_steps or None)
            if run.finished:
                break
            time.sleep(poll)
    _report(run)
    if run.status == FAILED:
        raise typer.Exit(1)


def _report(run: TrainingRun) -> None:
    if run.status == SUCCEEDED:
        verdict = {"rejected": "the gate [red]rejected[/red] it",
                   "promoted": "the gate passed it and it was [green]promoted[/green]",
                   "candidate": "the gate passed it: a [yellow]candidate[/yellow]"}
        console.print(f"[green]succeeded[/green]: registered {run.adapter_id}; "
                      f"{verdict.get(run.gate_outcome or '', 'gate outcome unknown')}")
    else:
        console.print(f"[red]failed[/red] (attempt {run.attempts}): {run.error}")


def _json_object(text: str, option: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        console.print(f"[red]{option} is not JSON:[/red] {exc}")
        raise typer.Exit(2) from None
    if not isinstance(value, dict):
        console.print(f"[red]{option} must be a JSON object[/red]")
        raise typer.Exit(2)
    return value


def _runs_table(runs: list[TrainingRun]) -> None:
    table = Table("run", "specialist", "parent")
    table.add_column("status", no_wrap=True)  # "succeeded (rejected)": the gate's word matters
    for name in ("step", "loss", "adapter", "created"):
        table.add_column(name)
    for r in runs:
        table.add_row(r.run_id, r.specialist, r.parent_adapter_id or "root", r.outcome,
                      f"{r.step}/{r.total_steps}", f"{r.last_loss:.4f}" if r.last_loss else "",
                      r.adapter_id or (r.error or "")[:40], r.created_at.isoformat(timespec="seconds"))
    console.print(table)


# --- triggers ----------------------------------------------------------------------

@triggers_app.command("evaluate")
def triggers_evaluate() -> None:
    """Evaluate every specialist's policy once; queue what is due (exactly once)."""
    with cli_parts() as parts:
        _evaluate(parts)
        _join_in_process(parts)  # embedded: the runs train in this process


@triggers_app.command("run")
def triggers_run(interval: float = typer.Option(30.0, help="Seconds between evaluations"),
                 rounds: int = typer.Option(0, help="Stop after this many (0: never)")) -> None:
    """Keep evaluating the policies (and re-sending runs no worker holds)."""
    with cli_parts() as parts:
        done = 0
        while rounds == 0 or done < rounds:
            _evaluate(parts)
            resent = parts.triggers.redispatch()
            if resent:
                console.print(f"re-sent {len(resent)} run(s) no worker held: {', '.join(resent)}")
            done += 1
            if rounds == 0 or done < rounds:
                time.sleep(interval)
        _join_in_process(parts)


def _join_in_process(parts: Container) -> None:
    if isinstance(parts.dispatcher, InProcessDispatcher):
        parts.dispatcher.join()


def _evaluate(parts: Container) -> None:
    for result in parts.triggers.evaluate(cli_actor()):
        mark = "[green]fired[/green]" if result.fired and result.fired.created else "-"
        run = f" run {result.fired.run_id}" if result.fired else ""
        console.print(f"{result.specialist:10} {mark} {result.note}{run}")


@triggers_app.command("show")
def triggers_show(specialist: str) -> None:
    """The effective policy, where it comes from, and the state it sees now."""
    with cli_parts() as parts:
        state = parts.triggers.state(specialist)
        print_json({**parts.policies.effective(specialist).to_json(), "state": state.__dict__})


@triggers_app.command("set")
def triggers_set(specialist: str, policy: str = typer.Argument(..., help="The policy as JSON")) -> None:
    """Configure a policy (overrides the contract's), e.g. '{"min_new_rewards": 50}'."""
    from pydantic import ValidationError

    from contract.policy import TriggerPolicy

    try:
        parsed = TriggerPolicy.model_validate_json(policy)
    except ValidationError as exc:
        console.print(f"[red]invalid policy:[/red] {exc}")
        raise typer.Exit(2) from None
    with cli_parts() as parts:
        print_json(parts.policies.configure(specialist, parsed, cli_actor()).to_json())


@triggers_app.command("clear")
def triggers_clear(specialist: str, reason: str = typer.Option("", help="Recorded in the event")) -> None:
    """Drop the policy set with `triggers set`: the contract's is in force again."""
    with cli_parts() as parts:
        print_json(parts.policies.clear(specialist, cli_actor(), reason).to_json())


@triggers_app.command("firings")
def triggers_firings(specialist: str = typer.Option(None, "--specialist", "-s")) -> None:
    """Recent firings: policy, reason, parent, dataset cut, run."""
    with cli_parts() as parts:
        table = Table("fired at", "specialist", "policy", "parent", "cut", "run", "reason")
        for f in parts.triggers.firings(specialist):
            policy = f"{f.policy} #{f.rerun}" if f.rerun else f.policy
            table.add_row(f.fired_at.isoformat(timespec="seconds"), f.specialist, policy,
                          f.parent_key, str(f.dataset_cut), f.run_id[:8], f.reason)
        console.print(table)


# --- the worker --------------------------------------------------------------------

def trainer(
    concurrency: int = typer.Option(1, help="Training processes (one per accelerator)"),
    loglevel: str = typer.Option("info"),
    pool: str = typer.Option("prefork", help="prefork, solo or threads"),
    beat: float = typer.Option(0.0, help="Also evaluate the trigger policies every N seconds"),
    visibility_timeout: float = typer.Option(None, help="Seconds before Redis redelivers an "
                                             "unacknowledged task (must exceed the longest run)"),
    lease_seconds: float = typer.Option(None, help="How long a silent worker keeps its run"),
    queues: str = typer.Option(None, "-Q", help="Queues to consume (default hcp.training)"),
) -> None:
    """Start a Celery training worker on the Redis broker (HCP_REDIS_URL)."""
    from trainer.runs.celery_app import LEASE_SECONDS, VISIBILITY_TIMEOUT

    settings = get_settings()
    if not settings.redis_url:
        console.print("[red]HCP_REDIS_URL is empty[/red]: embedded mode trains in-process, "
                      "no worker is needed")
        raise typer.Exit(2)
    app = celery_worker(settings, visibility_timeout=visibility_timeout or VISIBILITY_TIMEOUT,
                        lease_seconds=lease_seconds or LEASE_SECONDS, beat_seconds=beat or None)
    argv = ["worker", f"--loglevel={loglevel}", f"--concurrency={concurrency}", f"--pool={pool}"]
    argv += ["-B"] if beat else []
    argv += ["-Q", queues] if queues else []
    app.worker_main(argv)


def register(app: typer.Typer) -> None:
    app.add_typer(train_app, name="train")
    app.add_typer(triggers_app, name="triggers")
    app.command()(trainer)

