"""`hcp verify`: the hash chain re-checked, and what that does and does not prove.

A chain that verifies proves that events 1..N link up; it cannot show that events after
N were cut away (what is left still chains). Only a checkpoint kept from before can:
one given with ``--checkpoint`` (an export or a signed note kept elsewhere), or else the
latest one the server signed. That one lives in the same database as the log, so it
catches a tail lost by accident or by a restore, not someone who rewrites both.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from cli.common import cli_container
from cli.errors import CHECK_FAILED
from cli.output import JsonOpt, print_json, progress_console
from kernel.errors import Invalid

if TYPE_CHECKING:
    from audit.checkpoints import Checkpoint
    from audit.verify import LogCheck
    from events.chain import VerifyReport
    from hcp.bootstrap import Container

TAIL_CAVEAT = "a truncated tail is detected only against a kept checkpoint (`--checkpoint`)"


def verify(
    checkpoint: Path = typer.Option(None, "--checkpoint", help="Checkpoints you kept (an export or one "
                                    "signed note): exit 1 if the log was truncated or rewritten since; "
                                    "default: the latest one the server signed, if any"),
    key: str = typer.Option(None, help="The log's verifier key for the checkpoints (text or file); "
                            "default: the server's own"),
    as_json: bool = JsonOpt,
) -> None:
    """Re-check the whole hash chain, and the log against a kept checkpoint; exit 0 when
    both hold, 1 naming the first broken position or the checkpoint the log fails."""
    with cli_container() as container:
        report = _verify_chain(container)
        kept = _kept(container, checkpoint, key)
        verdicts = _against(container, kept.checkpoints) if kept.checkpoints else []
    if as_json:
        print_json(_as_json(report, kept, verdicts))
    else:
        _say(report, kept, verdicts)
    if not (report.intact and kept.signature_ok and all(v.ok for v in verdicts)):
        raise typer.Exit(CHECK_FAILED)


def _verify_chain(container: Container) -> VerifyReport:
    from rich.progress import Progress

    from events.chain import verify_chain

    with Progress(console=progress_console(), transient=True) as progress:
        task = progress.add_task("verifying", total=container.store.head())

        def advancing() -> Iterator[Any]:
            for event in container.store.iter_all(raw=True):
                progress.update(task, completed=event.position)
                yield event

        return verify_chain(advancing())


@dataclass(frozen=True)
class Kept:
    """The checkpoints to hold the log against, and where they come from (in words)."""

    checkpoints: list[Checkpoint] = field(default_factory=list)
    source: str = ""
    signature_ok: bool = True  # False: the server's latest checkpoint fails its key


def _kept(container: Container, path: Path | None, key: str | None) -> Kept:
    from audit.checkpoints import CheckpointError, load_checkpoints, open_checkpoint
    from cli.audit_keys import load_verifier

    verifier = load_verifier(key) or container.verifier
    if path is not None:
        if verifier is None:
            raise Invalid("--checkpoint needs the log's verifier key (--key)")
        try:
            return Kept([k.checkpoint for k in load_checkpoints(path.read_bytes(), verifier)], str(path))
        except CheckpointError as exc:
            raise Invalid(f"{path}: {exc}") from None
    latest = container.checkpoint_store.latest()
    if latest is None:
        return Kept()
    source = f"the latest checkpoint the server signed (number {latest.position})"
    if verifier is None:
        return Kept([latest.checkpoint], source + ", its signature unchecked (no key: --key)")
    try:
        return Kept([open_checkpoint(latest.note, verifier).checkpoint], source)
    except CheckpointError as exc:
        # Stored beside the log, a checkpoint the key does not sign was written by
        # someone else: a failed check, like a rewritten log.
        return Kept([latest.checkpoint], f"{source}, whose signature FAILS: {exc}", False)


def _against(container: Container, kept: list[Checkpoint]) -> list[LogCheck]:
    from audit.verify import check_log

    def chain_hashes() -> Iterator[str]:
        after = 0
        while links := container.store.chain_links(after, 10_000):
            yield from (link.hash for link in links)
            after = links[-1].position

    return check_log(chain_hashes(), kept)


def _say(report: VerifyReport, kept: Kept, verdicts: list[LogCheck]) -> None:
    if report.intact:
        typer.echo(f"intact: {report.checked} events, positions 1..{report.last_position}: the "
                   f"chain is intact up to position {report.last_position}; {TAIL_CAVEAT}")
    else:
        brk = report.first_break
        assert brk is not None
        typer.echo(f"BROKEN at position {brk.position}: {brk.reason} "
                   f"(events 1..{report.last_position} verified)")
    if not kept.source:
        typer.echo("no checkpoint kept: nothing shows whether events after position "
                   f"{report.last_position} were cut away (`hcp audit checkpoint create`, then "
                   "`hcp audit checkpoint export` to keep them elsewhere)")
        return
    typer.echo(f"against {kept.source}:")
    for verdict in verdicts:
        typer.echo(f"{verdict.verdict.upper()}: {verdict.detail}")


def _as_json(report: VerifyReport, kept: Kept, verdicts: list[LogCheck]) -> dict[str, Any]:
    brk = report.first_break
    return {"intact": report.intact, "checked": report.checked, "last_position": report.last_position,
            "first_break_position": brk.position if brk else None,
            "reason": brk.reason if brk else None, "checkpoints_from": kept.source or None,
            "checkpoint_signature_ok": kept.signature_ok,
            "checkpoints": [{"verdict": v.verdict, "size": v.checkpoint.size, "detail": v.detail}
                            for v in verdicts],
            "ok": report.intact and kept.signature_ok and all(v.ok for v in verdicts)}


def register(app: typer.Typer) -> None:
    app.command()(verify)
