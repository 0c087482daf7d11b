"""`hcp audit …`: audits re-derived from the log, the checkpoint key, and (in
``cli.audit_proofs``) checkpoints, proofs and their offline check."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from cli.audit_keys import KEY_HELP, load_verifier
from cli.common import cli_container
from cli.errors import CHECK_FAILED
from cli.output import (
    JsonOpt,
    cli_actor,
    command_group,
    print_json,
    print_table,
    progress_console,
    table,
)
from kernel.errors import Invalid

if TYPE_CHECKING:
    from rich.progress import TaskID

    from audit.keys import VerifierKey
    from audit.report import AuditReport
    from audit.sources import Progress
    from hcp.bootstrap import Container

app = command_group("What an auditor asks and proves: audits, keys, checkpoints, proofs")

@app.command("adapter")
def audit_adapter(adapter_id: str = typer.Argument(..., help="SPECIALIST@VERSION"),
                  as_json: bool = JsonOpt,
                  key: str = typer.Option(None, help=KEY_HELP)) -> None:
    """Audit a version and its whole ancestry; exit 1 naming every mismatch."""
    verifier = load_verifier(key)
    with cli_container() as c:
        report, _ = c.audit_runs.adapter(adapter_id, cli_actor(), "cli", verifier)  # stored in the log
    emit(report, as_json)


@app.command("all")
def audit_all(
    as_json: bool = JsonOpt, key: str = typer.Option(None, help=KEY_HELP),
    since_checkpoint: bool = typer.Option(False, "--since-checkpoint", help=(
        "Audit only what came after a signed checkpoint (its signature and the log's consistency "
        "with it checked first) and a seeded sample of the rest; default: everything")),
    checkpoint: Path = typer.Option(None, "--checkpoint", help=(
        "With --since-checkpoint: start from the newest checkpoint in this file (an export you "
        "kept), not the latest one the server stored")),
    sample: int = typer.Option(100, min=0, max=1_000_000, help=(
        "With --since-checkpoint: older rows per table (events, rewards) checked as well")),
    sample_manifests: int = typer.Option(2, min=0, max=100_000, help=(
        "With --since-checkpoint: older manifests checked as well (each with all its member rows "
        "and its examples rebuilt from the rewards)")),
    seed: str = typer.Option(None, help=(
        "With --since-checkpoint: the sample's seed (default: a random one; the report names it, "
        "and the same seed draws the same sample)")),
) -> None:
    """Audit every audited row and the whole log (or what came after a signed checkpoint);
    exit 1 naming every mismatch."""
    from rich.progress import Progress

    verifier = load_verifier(key)
    if not since_checkpoint and (checkpoint is not None or seed is not None):
        raise Invalid("--checkpoint and --seed go with --since-checkpoint")
    # On stderr: progress never mixes with --json on stdout.
    with cli_container() as c, Progress(console=progress_console(), transient=True) as bar:
        tasks: dict[str, TaskID] = {}

        def on_progress(check: str, done: int, total: int) -> None:
            if check not in tasks:
                tasks[check] = bar.add_task(check, total=max(total, 1))
            bar.update(tasks[check], completed=done, total=max(total, 1))

        if since_checkpoint:
            report = _since(c, verifier, checkpoint, (sample, sample_manifests), seed, on_progress)
        else:
            report, _ = c.audit_runs.everything(cli_actor(), "cli", verifier, on_progress)  # stored
    emit(report, as_json)


def _since(c: Container, verifier: VerifierKey | None, kept: Path | None, sample: tuple[int, int],
           seed: str | None, on_progress: Progress) -> AuditReport:
    from audit.incremental import kept_base, latest_base, new_seed
    from events.projections.window import Window

    verifier = verifier or c.verifier
    if kept is not None:
        if verifier is None:
            raise Invalid("--checkpoint needs the log's verifier key (--key)")
        base = kept_base(kept.read_bytes(), verifier, str(kept))
    else:
        base = latest_base(c.checkpoint_store)
    window = Window(base.size, sample[0], seed or new_seed(), sample[1])
    report, _ = c.audit_runs.since(base, window, cli_actor(), "cli", verifier, on_progress)  # stored
    return report


def emit(report: AuditReport, as_json: bool) -> None:
    if as_json:
        print_json(report.to_json())
    else:
        if report.coverage:
            typer.echo(coverage_line(report.coverage))
        shown = table("check", "rows", "against", "checked", "result", "seconds", title=report.scope)
        for c in report.checks:
            result = "ok" if c.ok else f"[red]{len(c.mismatches)} mismatch(es)[/red]"
            shown.add_row(c.name, c.table, c.against, str(c.checked), result, f"{c.seconds:.2f}")
        print_table(shown)
        for c in report.checks:
            for note in c.notes:
                typer.echo(f"note [{c.name}]: {note}")
        for mismatch in report.mismatches:
            typer.echo(f"MISMATCH {mismatch.line()}")
        typer.echo("audit ok" if report.ok else f"audit FAILED: {len(report.mismatches)} mismatch(es)")
    if not report.ok:
        raise typer.Exit(CHECK_FAILED)


def coverage_line(coverage: dict[str, Any]) -> str:
    """Which audit ran, and what it covered, in one line."""
    if coverage.get("kind") != "incremental":
        return f"full audit: every row, and the log's {coverage.get('events', 0):,} events"
    span = coverage["rehashed"]
    events = f"events {span[0]:,}..{span[1]:,} re-hashed" if span else "no event after it"
    return (f"incremental audit since {coverage['checkpoint']} (size {coverage['checkpoint_size']:,}): "
            f"{events}; older rows sampled: {coverage['sample']} per table and "
            f"{coverage['sample_manifests']} manifest(s), seed {coverage['seed']!r} (--seed repeats it)")


@app.command("keygen")
def keygen(origin: str = typer.Option(..., help="The log's name, also the key's: e.g. hcp.example.com/log"),
           out: Path = typer.Option(..., "--out", help="Where to write the private key (mode 0600)"),
           force: bool = typer.Option(False, help="Overwrite an existing file")) -> None:
    """Create the checkpoint signing key; print its public verifier key (last line)."""
    from audit.keys import KeyFormatError, SigningKey

    try:
        key = SigningKey.generate(origin)
    except KeyFormatError as exc:
        raise Invalid(f"--origin: {exc}") from None
    if out.exists() and not force:
        raise Invalid(f"{out} exists (--force replaces it, and every auditor's pinned key)")
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        out.unlink()
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # never world-readable, not even briefly
    with os.fdopen(fd, "w") as f:
        f.write(key.skey() + "\n")
    typer.echo(f"wrote {out} (mode 0600); set HCP_CHECKPOINT_KEY_FILE={out.resolve()}; keep it out of the "
               "repository. Auditors pin this verifier key:", err=True)
    typer.echo(key.verifier().vkey())


@app.command("key")
def show_key(pem: bool = typer.Option(False, help="Also the public key as PEM"),
             as_json: bool = JsonOpt) -> None:
    """The verifier key of the configured checkpoint key (what auditors pin)."""
    with cli_container() as c:
        verifier = c.verifier
    if verifier is None:
        raise Invalid("HCP_CHECKPOINT_KEY_FILE is not set (`hcp audit keygen`)")
    if as_json:
        print_json({"name": verifier.name, "vkey": verifier.vkey(),
                    **({"pem": verifier.public_pem().decode()} if pem else {})})
        return
    typer.echo(verifier.vkey())
    if pem:
        typer.echo(verifier.public_pem().decode().rstrip())


def register(root: typer.Typer) -> None:
    from cli import audit_proofs

    audit_proofs.register(app)
    root.add_typer(app, name="audit")
