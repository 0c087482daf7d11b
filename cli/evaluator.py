"""`hcp evaluator`, `hcp rewards …`, and `hcp contract dry-run / reevaluate`."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from cli.common import cli_container
from cli.errors import CHECK_FAILED
from cli.evaluator_processes import evaluator_command, run_processes
from cli.output import JsonOpt, command_group, progress_console
from cli.signals import stop_on_signals

if TYPE_CHECKING:
    from contract.dryrun import DryRunReport
    from evaluators.dryrun import DryRun
    from evaluators.evaluator import StepResult
    from evaluators.reevaluation import Job
    from hcp.bootstrap import Container

rewards_app = command_group("Reward records: list and inspect")
T = TypeVar("T")
# The defaults of hcp.services.DEFAULT_GROUP and evaluators.evaluator.DEFAULT_BATCH, spelt
# out so that `hcp evaluator --help` need not import the evaluator
# (tests/unit/test_cli_startup.py checks that they agree).
DEFAULT_GROUP = "evaluator"
DEFAULT_BATCH = 2000


def _with_container(action: Callable[[Container], T]) -> T:
    with cli_container() as container:
        return action(container)


def run_evaluator(
    once: bool = typer.Option(False, "--once", help="Score what is in the log now, finish "
                              "running re-evaluations, then exit"),
    group: str = typer.Option(DEFAULT_GROUP, help="Consumer group (Kafka) or checkpoint name"),
    batch_size: int = typer.Option(DEFAULT_BATCH, help="Most events scored per poll"),
    session_timeout: float = typer.Option(10.0, help="Seconds before a silent worker's Kafka "
                                          "partitions go to another member (broker minimum: 6)"),
    processes: int = typer.Option(1, "--processes", min=1, help="Evaluator processes to start, "
                                  "each with a share of the log (one per core scores the most)"),
    share: str = typer.Option(None, "--share", metavar="K/N", help="Read only share K of N of "
                              "the database log's streams (K from 0), as `--processes N` does"),
) -> None:
    """Score finished subjects under every active contract version; re-score history on publish."""
    from events.log_share import LogShare
    from hcp.settings import get_settings
    from kernel.collector import settle_garbage_collector

    if processes > 1:
        if share is not None:
            raise typer.BadParameter("give --processes or --share, not both", param_hint="--share")
        if get_settings().resolved_database_url.startswith("sqlite"):
            typer.echo("note: on SQLite each process reads the whole log and filters it, and "
                       "writers take turns: expect no gain (shares pay off on PostgreSQL)", err=True)
        options = [*(["--once"] if once else []), "--group", group, "--batch-size", str(batch_size),
                   "--session-timeout", str(session_timeout)]
        raise typer.Exit(run_processes(processes, evaluator_command(options)))
    try:
        log_share = None if share is None else LogShare.parse(share)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--share") from None
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    with cli_container() as container:
        worker = container.evaluator(group, batch_size, session_timeout_s=session_timeout,
                                     share=log_share)
        settle_garbage_collector()  # startup is done: what it built lives as long as we do
        kafka = bool(container.settings.kafka_bootstrap)
        source = container.settings.events_topic if kafka else "database log"
        if log_share is not None and not kafka:
            source += f" (share {log_share})"
        try:
            if once:
                totals = worker.drain(timeout=3600, on_step=_echo_step)
                typer.echo(f"done: {totals.events} events, {totals.subjects} subjects, "
                           f"{totals.rewards} new rewards")
                return
            typer.echo(f"evaluating {source} in group {group}")
            worker.run(stop_on_signals(), on_step=_echo_step)
            typer.echo("stopped: last batch stored and committed")
        finally:
            worker.reader.close()


def _echo_step(step: StepResult) -> None:
    if step.events:
        typer.echo(f"scored {step.events} events: {step.subjects} subjects")
    if step.rewards:  # with the database log, stored while the next batch was scored
        typer.echo(f"stored {step.rewards} new rewards")
    for job in step.jobs_started:
        typer.echo(f"re-evaluation of {job.contract_name}@{job.contract_version} started "
                   f"(positions {job.from_position}..{job.to_position})")
    if step.job_progress is not None:
        job = step.job_progress
        typer.echo(f"re-evaluating {job.contract_name}@{job.contract_version}: "
                   f"{job.progress:.0%} ({job.done_position}/{job.to_position}), {job.status}")


@rewards_app.command("list")
def list_rewards(
    contract: str = typer.Option(None, help="NAME, NAME@<version> or NAME@latest"),
    subject: str = typer.Option(None, help="Only this subject id"),
    stream: str = typer.Option(None, help="Only subjects of this stream"),
    specialist: str = typer.Option(None),
    after: int = typer.Option(0, help="Reward position to start after"),
    limit: int = typer.Option(50, min=1, max=10_000),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per line (errors as "
                                 "JSON on stderr)"),
) -> None:
    """Reward records in position order, optionally under one contract version."""

    from evaluators.refs import parse_contract_ref
    from evaluators.refs import reward_query as build_query

    def run(c: Container) -> list[dict[str, Any]]:
        name, version = parse_contract_ref(contract) if contract else (None, None)
        query = build_query(c.contracts, name, version, subject_id=subject, stream_id=stream,
                            specialist=specialist, after=after, limit=limit)
        return [r.to_json() for r in c.rewards.find(query)]

    for reward in _with_container(run):
        typer.echo(json.dumps(reward) if as_json else _reward_line(reward))


@rewards_app.command("show")
def show_reward(reward_id: str = typer.Argument(..., help="A reward id (as `hcp rewards list` "
                                                "and the lineage trees print it)"),
                as_json: bool = typer.Option(False, "--json", help="JSON on stdout (errors as "
                                             "JSON on stderr)")) -> None:
    """One reward record: its subject, contract version, score, criteria and split."""
    import uuid

    from cli.output import print_fields, print_json
    from kernel.errors import Invalid, NotFound

    try:
        wanted = uuid.UUID(reward_id)
    except ValueError:
        raise Invalid(f"'{reward_id}' is not a reward id (a UUID)") from None
    found = _with_container(lambda c: c.rewards.get(wanted))
    if found is None:
        raise NotFound(f"no reward {reward_id}")
    print_json(found.to_json()) if as_json else print_fields(found.to_json(), f"reward {reward_id}")


def _reward_line(r: dict[str, Any]) -> str:
    score = "error" if r["errors"] else ("-" if r["score"] is None else f"{r['score']:.3f}")
    eligible = "eligible" if r["eligible"] else "-"
    contract = f"{r['contract']['name']}@{r['contract']['version']}"
    return (f"{r['position']:>8}  {r['reward_id']}  {contract:<16} {score:>6}  {r['split']:<8} "
            f"{eligible:<8} {r['specialist'] or '-':<10} {r['subject']['id']}")


def dry_run(
    name: str, version: int,
    baseline: int = typer.Option(None, help="Published version to compare with "
                                 "(default: the draft's parent, else the latest published)"),
    last: int = typer.Option(None, help="The last N finished subjects"),
    from_position: int = typer.Option(None, "--from", help="First position of a range"),
    to_position: int = typer.Option(None, "--to", help="Last position of a range"),
    top: int = typer.Option(10, help="How many of the largest movers to show"),
    max_error_rate: float = typer.Option(None, min=0.0, max=1.0, help="Exit 1 when more of the "
                                         "applicable subjects error (default HCP_MAX_ERROR_RATE)"),
    tenant: str = typer.Option(None, help="Score only this tenant's subjects"),
    as_json: bool = JsonOpt,
) -> None:
    """Score VERSION over history without writing anything, and compare with a baseline
    (bounded by HCP_DRY_RUN_BUDGET_SECONDS; a progress bar on the terminal meanwhile);
    exit 1 when it errors on more of the applicable subjects than allowed."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn

    from evaluators.dryrun import Selection

    if last is None and from_position is None and to_position is None:
        last = 500

    def run(c: Container) -> DryRun:
        selection = Selection(last, from_position, to_position)
        with Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                      MofNCompleteColumn(), TextColumn("subjects"), console=progress_console(),
                      transient=True, disable=as_json) as bar:
            task = bar.add_task(f"dry run {name}@{version}", total=None)
            return c.dry_runs.run(name, version, selection, baseline, top, max_error_rate,
                                  tenant=tenant, on_progress=lambda done, total: bar.update(
                                      task, completed=done, total=total))

    result = _with_container(run)
    typer.echo(json.dumps(result.to_json(), indent=2) if as_json else render_dry_run(result))
    if not result.passed:
        typer.echo(f"error: {result.report.errors} of {result.report.applicable} applicable "
                   f"subjects errored ({result.report.error_rate:.1%}, limit "
                   f"{result.max_error_rate:.1%})", err=True)
        raise typer.Exit(CHECK_FAILED)


def render_dry_run(result: DryRun) -> str:
    title = (f"dry run of {result.draft.name}@{result.draft.version} ({result.draft.status}) over "
             f"{result.subjects} subjects" + (" (range truncated)" if result.truncated else ""))
    base = result.baseline
    if result.stopped:
        title += f" (stopped: {result.stopped})"
    text = render_report(title, result.report, f"{base.name}@{base.version}" if base else None)
    return text + (render_judges(result.judges.to_json()) if result.judges is not None else "")


def render_judges(judges: dict[str, Any]) -> str:
    """The draft's judges' verdicts: counts, the mean score, a few verdicts as recorded."""
    lines = [f"\n  judged {judges['judged']} subjects" + (
        f"; {judges['waiting']} waiting for a verdict ({judges['reason']})" if judges["waiting"] else "")]
    for judge_id, entry in judges["judges"].items():
        lines.append(f"  judge {judge_id} ({entry['model'][:19]}…): {entry['verdicts']} verdicts, "
                     f"{entry['unreadable']} unreadable, mean score {_num(entry['mean_score'])}")
        for sample in entry["samples"]:
            verdict = " ".join(str(sample["verdict"]).split())[:60]
            read = sample["error"] or f"score {_num(sample['score'])}"
            lines.append(f"    {sample['subject_id']}: {verdict!r} -> {read}")
    return "\n".join(lines)


def render_report(title: str, r: DryRunReport, base: str | None, draft: str = "draft") -> str:
    lines = [title, f"  applicable {r.applicable}, scored {r.scored}, errors {r.errors} "
             f"({r.error_rate:.1%})", f"  mean {_num(r.mean)}"]
    if base is not None:
        lines += [f"  baseline {base}: mean {_num(r.baseline_mean)}, errors {r.baseline_errors}",
                  f"  mean delta {_num(r.mean_delta, signed=True)} over {r.compared} subjects scored by both",
                  f"  eligibility: {r.became_eligible} became eligible, "
                  f"{r.became_ineligible} became ineligible"]
    else:
        lines.append("  no baseline: nothing published to compare with")
    lines += _breakdown(r, base is not None)
    lines.append(f"  histogram ({draft}" + (" | baseline)" if base else ")"))
    peak = max([*r.histogram, *r.baseline_histogram, 1])
    for i, count in enumerate(r.histogram):
        bar = "#" * round(30 * count / peak)
        other = f" | {r.baseline_histogram[i]}" if base else ""
        low, high = i / len(r.histogram), (i + 1) / len(r.histogram)
        lines.append(f"    [{low:.1f}, {high:.1f}) {bar:<30} {count}{other}")
    if r.largest_movers:
        lines.append("  largest movers")
        lines += [f"    {m.delta:+.3f}  {m.baseline:.3f} -> {m.draft:.3f}  {m.subject_id}"
                  for m in r.largest_movers]
    if r.error_samples:
        lines.append("  errors (samples)")
        lines += [f"    {s['subject_id']}: {s['item']}: {s['message']}" for s in r.error_samples]
    return "\n".join(lines)


def _breakdown(r: DryRunReport, compared: bool) -> list[str]:
    lines = ["  per criterion" + ("  (mean, baseline, delta, errors)" if compared else "")]
    for cid, c in r.criteria.items():
        lines.append(f"    {cid:<20} {_num(c['mean'])}  {_num(c['baseline_mean'])}  "
                     f"{_num(c['mean_delta'], signed=True)}  {c['errors']}")
    lines.append("  per specialist  (subjects, errors, mean, baseline, delta)")
    for name, s in r.specialists.items():
        lines.append(f"    {name:<12} {s['count']:>6} {s['errors']:>6}  {_num(s['mean'])}  "
                     f"{_num(s['baseline_mean'])}  {_num(s['mean_delta'], signed=True)}")
    return lines


def compare(
    name: str, a: int, b: int,
    last: int = typer.Option(500, help="The latest N rewards of B"),
    other: str = typer.Option(None, help="Contract of version A, if another"),
    top: int = typer.Option(10, help="How many of the largest movers to show"),
    as_json: bool = JsonOpt,
) -> None:
    """Compare the rewards versions A and B already stored for the same subjects."""
    result = _with_container(lambda c: c.comparisons.compare(name, a, b, last, top, other))
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2))
        return
    title = (f"stored rewards of {result.b.name}@{result.b.version} on its latest "
             f"{result.subjects} subjects against {result.a.name}@{result.a.version}")
    typer.echo(render_report(title, result.report, f"{result.a.name}@{result.a.version}",
                             f"{result.b.name}@{result.b.version}"))


def _num(value: float | None, signed: bool = False) -> str:
    return "-" if value is None else (f"{value:+.4f}" if signed else f"{value:.4f}")


def reevaluate(
    name: str, version: int,
    from_position: int = typer.Option(1, "--from", help="First log position to re-score from"),
) -> None:
    """Re-score history under a published VERSION (resumes a started job), with progress."""
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn

    with cli_container() as container:
        job = container.reevaluations.start(name, version, from_position)
        with Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                      TextColumn("{task.fields[detail]}"), console=progress_console()) as bar:
            task = bar.add_task(f"{name}@{version}", total=1.0, detail="")

            def show(current: Job) -> None:
                bar.update(task, completed=current.progress, detail=(
                    f"position {current.done_position}/{current.to_position}, "
                    f"{current.subjects_scored} scored, {current.subjects_errored} errored"))

            job = container.reevaluations.run(job.job_id, on_progress=show)
    typer.echo(f"{job.status}: {job.subjects_scored} scored, {job.subjects_errored} errored, "
               f"{job.subjects_skipped} skipped (not applicable) of the subjects closed at "
               f"positions {job.from_position}..{job.to_position}, under {name}@{version}")
    if job.error:
        typer.echo(f"{'warning' if job.status == 'succeeded' else 'error'}: {job.error}", err=True)
    if job.status != "succeeded":
        raise typer.Exit(CHECK_FAILED)


def register(app: typer.Typer) -> None:
    from cli import contract as contract_cli

    app.command("evaluator")(run_evaluator)
    app.add_typer(rewards_app, name="rewards")
    contract_cli.app.command("dry-run")(dry_run)
    contract_cli.app.command("reevaluate")(reevaluate)
    contract_cli.app.command("compare")(compare)
