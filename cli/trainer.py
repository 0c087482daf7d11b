"""`hcp train …` and `hcp trainer` (the Celery worker); the trigger commands are in
``cli/triggers.py``, the registry's (`adapters`, `alias`, `base-models`) in ``cli/registry.py``."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import typer

from cli.common import cli_container
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
    progress_console,
    table,
)
from kernel.errors import Invalid

if TYPE_CHECKING:
    from hcp.bootstrap import Container
    from trainer.runs.model import TrainingRun

train_app = command_group("Training runs: start by hand, watch, retry")


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
    with cli_container() as parts:
        firing = parts.triggers.fire_manual(
            specialist, cli_actor(), reason or ("" if force else "manual trigger (CLI)"), parent,
            base_model, force, overrides)
        word = ("queued forced re-run" if firing.rerun and firing.created else
                "queued" if firing.created else "already fired as")
        console().print(f"{word} run {firing.run_id} ({specialist}, parent {firing.parent_key}, "
                        f"dataset cut {firing.dataset_cut})")
        if not firing.dispatched:
            _not_sent(firing.run_id)
            return
        # Embedded mode trains in a thread of this process: it must live until the run ends.
        if follow or not parts.settings.redis_url:
            _follow(parts, firing.run_id)


@train_app.command("status")
def train_status(
    run_id: str = typer.Argument(None, help="A run id; without it, the latest runs"),
    follow: bool = typer.Option(False, "--follow", "-f", help="Progress bar until the run ends"),
    specialist: str = typer.Option(None, "--specialist", "-s"),
    as_json: bool = JsonOpt,
) -> None:
    """A run's status (queued, running with step and loss, succeeded, failed with reason)."""
    with cli_container() as parts:
        if run_id is None:
            runs = parts.runs.recent(specialist, None, 20)
            if as_json:
                print_json_lines(r.to_json() for r in runs)
            else:
                _runs_table(runs)
        elif follow:
            _follow(parts, run_id)
        elif as_json:
            print_json(parts.runs.get(run_id).to_json())
        else:
            _run_fields(parts.runs.get(run_id))


@train_app.command("retry")
def train_retry(run_id: str, reason: str = typer.Option("retry (CLI)"),
                follow: bool = typer.Option(True)) -> None:
    """Queue a failed run again."""
    with cli_container() as parts:
        parts.runs.requeue(run_id, cli_actor(), reason)
        if not parts.triggers.send(run_id):
            _not_sent(run_id)
            return
        if follow or not parts.settings.redis_url:
            _follow(parts, run_id)


def _not_sent(run_id: str) -> None:
    console().print(f"[yellow]the broker (HCP_REDIS_URL) is unreachable[/yellow]: run {run_id} is "
                    "saved as queued and goes out when Redis is back (a trainer worker re-sends "
                    "queued runs); `hcp train status` shows it")


def _follow(parts: Container, run_id: str, poll: float = 0.5) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[loss]}"), TimeElapsedColumn())
    with Progress(*columns, console=progress_console()) as progress:
        task = progress.add_task(run_id, total=None, loss="")
        while True:
            run = parts.runs.get(run_id)
            loss = f"loss {run.last_loss:.4f}" if run.last_loss is not None else ""
            progress.update(task, description=f"{run_id} {run.status}", loss=loss,
                            completed=run.step, total=run.total_steps or None)
            if run.finished:
                break
            time.sleep(poll)
    _report(run)
    if run.status == "failed":
        raise typer.Exit(CHECK_FAILED)


def _report(run: TrainingRun) -> None:
    if run.status == "succeeded":
        verdict = {"rejected": "the gate [red]rejected[/red] it",
                   "promoted": "the gate passed it and it was [green]promoted[/green]",
                   "candidate": "the gate passed it: a [yellow]candidate[/yellow]"}
        console().print(f"[green]succeeded[/green]: registered {run.adapter_id}; "
                        f"{verdict.get(run.gate_outcome or '', 'gate outcome unknown')}")
    else:
        console().print(f"[red]failed[/red] (attempt {run.attempts}): {run.error}")


def _run_fields(run: TrainingRun) -> None:
    fields = run.to_json()
    first = ("status", "gate_outcome", "adapter_id", "error")
    head: dict[str, Any] = {k: fields.pop(k) for k in first if k in fields}
    loss = "-" if run.last_loss is None else f"{run.last_loss:.4f}"
    print_fields({**head, "progress": f"step {run.step}/{run.total_steps}, loss {loss}",
                  **{k: v for k, v in fields.items() if k not in ("step", "total_steps", "last_loss")}},
                 title=f"run {run.run_id} ({run.specialist}): {run.outcome}")


def _json_object(text: str, option: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise Invalid(f"{option} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise Invalid(f"{option} must be a JSON object")
    return value


def _runs_table(runs: list[TrainingRun]) -> None:
    shown = table("run", "specialist", "parent")
    shown.add_column("status", no_wrap=True)  # "succeeded (rejected)": the gate's word matters
    for name in ("step", "loss", "adapter", "created"):
        shown.add_column(name)
    for r in runs:
        shown.add_row(r.run_id, r.specialist, r.parent_adapter_id or "root", r.outcome,
                      f"{r.step}/{r.total_steps}", f"{r.last_loss:.4f}" if r.last_loss else "",
                      r.adapter_id or (r.error or "")[:40], r.created_at.isoformat(timespec="seconds"))
    print_table(shown)


# --- the worker --------------------------------------------------------------------

def trainer(
    concurrency: int = typer.Option(1, help="Training processes (one per accelerator)"),
    loglevel: str = typer.Option("info"),
    pool: str = typer.Option("prefork", help="prefork, solo or threads"),
    beat: float = typer.Option(0.0, help="Also evaluate the trigger policies every N seconds"),
    redispatch_every: float = typer.Option(
        30.0, help="Re-send runs left queued (broker was down) or whose worker died, every N "
                   "seconds (0: never; then run `hcp triggers run` somewhere)"),
    requeue_after: float = typer.Option(60.0, help="How long a run waits queued before the "
                                        "re-send takes it (a send may just be in flight)"),
    visibility_timeout: float = typer.Option(None, help="Seconds before Redis redelivers an "
                                             "unacknowledged task (must exceed the longest run)"),
    lease_seconds: float = typer.Option(None, help="How long a silent worker keeps its run"),
    queues: str = typer.Option(None, "-Q", help="Queues to consume (default hcp.training)"),
) -> None:
    """Start a Celery training worker on the Redis broker (HCP_REDIS_URL)."""
    from hcp.bootstrap import celery_worker
    from hcp.settings import get_settings
    from trainer.runs.celery_app import LEASE_SECONDS, VISIBILITY_TIMEOUT

    settings = get_settings()
    if not settings.redis_url:
        raise Invalid("HCP_REDIS_URL is empty: embedded mode trains in-process, no worker is needed")
    app = celery_worker(settings, visibility_timeout=visibility_timeout or VISIBILITY_TIMEOUT,
                        lease_seconds=lease_seconds or LEASE_SECONDS, beat_seconds=beat or None,
                        redispatch_seconds=redispatch_every or None, requeue_after=requeue_after)
    argv = ["worker", f"--loglevel={loglevel}", f"--concurrency={concurrency}", f"--pool={pool}"]
    # The beat runs with every worker by default, so a lost run's recovery does not wait
    # for someone to run `hcp triggers run`; several beats only send duplicates, which the
    # run's claim makes harmless.
    argv += ["-B"] if beat or redispatch_every else []
    argv += ["-Q", queues] if queues else []
    app.worker_main(argv)


def register(app: typer.Typer) -> None:
    from cli import triggers

    app.add_typer(train_app, name="train")
    triggers.register(app)
    app.command()(trainer)
