"""`hcp train|triggers|adapters|alias|base-models …` and `hcp trainer` (the Celery worker)."""

from __future__ import annotations

import getpass
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from hcp.bootstrap import bootstrap
from hcp.settings import get_settings
from trainer.model import FAILED, PROMOTED, REJECTED, SUCCEEDED, RegistryError, TrainingRun
from trainer.service import TrainerParts, trainer_parts

train_app = typer.Typer(help="Training runs: start by hand, watch, retry", no_args_is_help=True)
triggers_app = typer.Typer(help="Trigger policies: evaluate once, or keep evaluating", no_args_is_help=True)
adapters_app = typer.Typer(help="Adapter versions: list, inspect, lineage, promote", no_args_is_help=True)
alias_app = typer.Typer(help="Aliases (production, staging, …) per specialist", no_args_is_help=True)
base_app = typer.Typer(help="Base models the adapters are trained on", no_args_is_help=True)
console = Console()


def _actor() -> str:
    return f"cli:{getpass.getuser()}"


@contextmanager
def _parts() -> Iterator[TrainerParts]:
    """The trainer parts on a fresh container; registry errors become exit status 1."""
    container = bootstrap()
    try:
        yield trainer_parts(container)
    except RegistryError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from None
    finally:
        container.close()


def _json(data: Any) -> None:
    console.print_json(json.dumps(data, default=str))


# --- train -------------------------------------------------------------------------

@train_app.command("start")
def train_start(
    specialist: str = typer.Option(..., "--specialist", "-s"),
    parent: str = typer.Option(None, help="Parent adapter id, or 'root'; default: production"),
    base_model: str = typer.Option(None, help="Base model of a root version"),
    reason: str = typer.Option("", help="Recorded in the trigger.fired event"),
    follow: bool = typer.Option(True, help="Show progress until the run ends"),
) -> None:
    """Manual trigger: queue a run (or find the one already doing this work)."""
    with _parts() as parts:
        firing = parts.triggers.fire_manual(specialist, _actor(), reason or "manual trigger (CLI)",
                                            parent, base_model)
        word = "queued" if firing.created else "already fired as"
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
    with _parts() as parts:
        if run_id is None:
            _runs_table(parts.runs.recent(specialist, None, 20))
        elif follow:
            _follow(parts, run_id)
        else:
            _json(parts.runs.get(run_id).to_json())


@train_app.command("retry")
def train_retry(run_id: str, reason: str = typer.Option("retry (CLI)"),
                follow: bool = typer.Option(True)) -> None:
    """Queue a failed run again."""
    with _parts() as parts:
        parts.runs.requeue(run_id, _actor(), reason)
        parts.dispatcher.dispatch(run_id)
        if follow or not parts.settings.redis_url:
            _follow(parts, run_id)


def _follow(parts: TrainerParts, run_id: str, poll: float = 0.5) -> None:
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
        console.print(f"[green]succeeded[/green]: registered {run.adapter_id}")
    else:
        console.print(f"[red]failed[/red] (attempt {run.attempts}): {run.error}")


def _runs_table(runs: list[TrainingRun]) -> None:
    table = Table("run", "specialist", "parent", "status", "step", "loss", "adapter", "created")
    for r in runs:
        table.add_row(r.run_id, r.specialist, r.parent_adapter_id or "root", r.status,
                      f"{r.step}/{r.total_steps}", f"{r.last_loss:.4f}" if r.last_loss else "",
                      r.adapter_id or (r.error or "")[:40], r.created_at.isoformat(timespec="seconds"))
    console.print(table)


# --- triggers ----------------------------------------------------------------------

@triggers_app.command("evaluate")
def triggers_evaluate() -> None:
    """Evaluate every specialist's policy once; queue what is due (exactly once)."""
    with _parts() as parts:
        _evaluate(parts)
        if not parts.settings.redis_url:
            parts.dispatcher.join()  # embedded: the runs train in this process


@triggers_app.command("run")
def triggers_run(interval: float = typer.Option(30.0, help="Seconds between evaluations"),
                 rounds: int = typer.Option(0, help="Stop after this many (0: never)")) -> None:
    """Keep evaluating the policies (and re-sending runs no worker holds)."""
    with _parts() as parts:
        done = 0
        while rounds == 0 or done < rounds:
            _evaluate(parts)
            resent = parts.triggers.redispatch()
            if resent:
                console.print(f"re-sent {len(resent)} run(s) no worker held: {', '.join(resent)}")
            done += 1
            if rounds == 0 or done < rounds:
                time.sleep(interval)
        if not parts.settings.redis_url:
            parts.dispatcher.join()


def _evaluate(parts: TrainerParts) -> None:
    for result in parts.triggers.evaluate(_actor()):
        mark = "[green]fired[/green]" if result.fired and result.fired.created else "-"
        run = f" run {result.fired.run_id}" if result.fired else ""
        console.print(f"{result.specialist:10} {mark} {result.note}{run}")


@triggers_app.command("show")
def triggers_show(specialist: str) -> None:
    """The effective policy, where it comes from, and the state it sees now."""
    with _parts() as parts:
        state = parts.triggers.state(specialist)
        _json({**parts.policies.effective(specialist).to_json(), "state": state.__dict__})


@triggers_app.command("set")
def triggers_set(specialist: str, policy: str = typer.Argument(..., help="The policy as JSON")) -> None:
    """Configure a policy (overrides the contract's), e.g. '{"min_new_rewards": 50}'."""
    from pydantic import ValidationError

    from trainer.policy import TriggerPolicy

    try:
        parsed = TriggerPolicy.model_validate_json(policy)
    except ValidationError as exc:
        console.print(f"[red]invalid policy:[/red] {exc}")
        raise typer.Exit(2) from None
    with _parts() as parts:
        _json(parts.policies.configure(specialist, parsed, _actor()).to_json())


@triggers_app.command("firings")
def triggers_firings(specialist: str = typer.Option(None, "--specialist", "-s")) -> None:
    """Recent firings: policy, reason, parent, dataset cut, run."""
    with _parts() as parts:
        table = Table("fired at", "specialist", "policy", "parent", "cut", "run", "reason")
        for f in parts.triggers.firings(specialist):
            table.add_row(f.fired_at.isoformat(timespec="seconds"), f.specialist, f.policy,
                          f.parent_key, str(f.dataset_cut), f.run_id[:8], f.reason)
        console.print(table)


# --- adapters ----------------------------------------------------------------------

@adapters_app.command("list")
def adapters_list(specialist: str = typer.Option(None, "--specialist", "-s")) -> None:
    """Adapter versions, newest first, with status and parent."""
    with _parts() as parts:
        table = Table("adapter", "parent", "base", "status", "artifact", "registered")
        for a in parts.registry.adapters(specialist):
            table.add_row(a.adapter_id, a.parent_adapter_id or "root", a.base_model, a.status,
                          a.artifact_sha256[:12], a.registered_at.isoformat(timespec="seconds"))
        console.print(table)


@adapters_app.command("show")
def adapters_show(adapter_id: str) -> None:
    """Every field of a version: lineage references, hyper-parameters, metrics."""
    with _parts() as parts:
        _json(parts.registry.adapter(adapter_id).to_json())


@adapters_app.command("lineage")
def adapters_lineage(adapter_id: str,
                     deep: bool = typer.Option(False, help="Rebuild data, hash base")) -> None:
    """The chain back to the root, each link verified; exit 1 if any check fails."""
    with _parts() as parts:
        chain = parts.lineage.chain(adapter_id, deep)
    _json(chain)
    if not all(link["verified"] for link in chain):
        raise typer.Exit(1)


@adapters_app.command("promote")
def adapters_promote(adapter_id: str, reason: str = typer.Option(...),
                     alias: str = typer.Option("production")) -> None:
    """Promote by hand and move ALIAS to it."""
    with _parts() as parts:
        _json(parts.registry.set_status(adapter_id, PROMOTED, _actor(), reason, alias).to_json())


@adapters_app.command("reject")
def adapters_reject(adapter_id: str, reason: str = typer.Option(...)) -> None:
    """Mark a version rejected."""
    with _parts() as parts:
        _json(parts.registry.set_status(adapter_id, REJECTED, _actor(), reason).to_json())


# --- alias -------------------------------------------------------------------------

@alias_app.command("set")
def alias_set(specialist: str, alias: str, adapter_id: str, reason: str = typer.Option(...)) -> None:
    """Point ALIAS of SPECIALIST at ADAPTER_ID (an alias.moved event)."""
    with _parts() as parts:
        _json(parts.aliases.move(specialist, alias, adapter_id, _actor(), reason).to_json())


@alias_app.command("rollback")
def alias_rollback(specialist: str, alias: str, reason: str = typer.Option(...)) -> None:
    """Move ALIAS back to where it pointed before its latest move."""
    with _parts() as parts:
        _json(parts.aliases.rollback(specialist, alias, _actor(), reason).to_json())


@alias_app.command("at")
def alias_at(specialist: str, alias: str,
             time_: datetime = typer.Option(None, "--time", "-t", help="ISO time; default now")) -> None:
    """Where ALIAS pointed at a time."""
    with _parts() as parts:
        move = parts.aliases.at(specialist, alias, time_)
    console.print(move.adapter_id if move and move.adapter_id else "(unset)")


@alias_app.command("history")
def alias_history(specialist: str, alias: str = typer.Argument(None)) -> None:
    """Moves, newest first: when, who, from, to, why."""
    with _parts() as parts:
        table = Table("moved at", "alias", "from", "to", "actor", "reason")
        for m in parts.aliases.history(specialist, alias):
            table.add_row(m.moved_at.isoformat(timespec="seconds"), m.alias,
                          m.previous_adapter_id or "-", m.adapter_id or "-", m.actor, m.reason)
        console.print(table)


@alias_app.command("resolve")
def alias_resolve(specialist: str, alias: str = typer.Argument("production")) -> None:
    """What a server loads: adapter version, artifact location and sha256, base model."""
    with _parts() as parts:
        _json(parts.resolve(specialist, alias))


# --- base models -------------------------------------------------------------------

@base_app.command("register")
def base_register(path: Path, name: str = typer.Option(..., "--name", "-n")) -> None:
    """Register a local model directory (hashes its weight files)."""
    with _parts() as parts:
        _json(parts.registry.register_base_model(name, path, _actor()).to_json())


@base_app.command("build-tiny")
def base_build_tiny(name: str = typer.Option("tiny", "--name", "-n"),
                    directory: Path = typer.Option(None, "--dir", help="Default <data_dir>/models/NAME"),
                    seed: int = typer.Option(0)) -> None:
    """Build the tiny local causal LM (no download) and register it."""
    from trainer.ml.tiny_model import build_tiny_base_model

    target = directory or get_settings().data_dir / "models" / name
    path = build_tiny_base_model(target, seed=seed)
    with _parts() as parts:
        _json(parts.registry.register_base_model(name, path, _actor()).to_json())


@base_app.command("list")
def base_list() -> None:
    """Registered base models."""
    with _parts() as parts:
        table = Table("name", "weights sha256", "path", "registered")
        for b in parts.registry.base_models():
            table.add_row(b.name, b.weights_sha256[:16], b.path,
                          b.registered_at.isoformat(timespec="seconds"))
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
    from trainer.celery_app import LEASE_SECONDS, VISIBILITY_TIMEOUT, make_celery

    settings = get_settings()
    if not settings.redis_url:
        console.print("[red]HCP_REDIS_URL is empty[/red]: embedded mode trains in-process, "
                      "no worker is needed")
        raise typer.Exit(2)
    app = make_celery(settings, visibility_timeout=visibility_timeout or VISIBILITY_TIMEOUT,
                      lease_seconds=lease_seconds or LEASE_SECONDS, beat_seconds=beat or None)
    argv = ["worker", f"--loglevel={loglevel}", f"--concurrency={concurrency}", f"--pool={pool}"]
    argv += ["-B"] if beat else []
    argv += ["-Q", queues] if queues else []
    app.worker_main(argv)


def register(app: typer.Typer) -> None:
    app.add_typer(train_app, name="train")
    app.add_typer(triggers_app, name="triggers")
    app.add_typer(adapters_app, name="adapters")
    app.add_typer(alias_app, name="alias")
    app.add_typer(base_app, name="base-models")
    app.command()(trainer)

