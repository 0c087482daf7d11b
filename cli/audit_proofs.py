"""`hcp audit checkpoint|tree|proof|consistency|prove`: signed checkpoints and proofs.

Everything but ``prove`` runs against the server's database; ``prove`` is the auditor's
side: it checks a bundle offline, with nothing but the log's public key.
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from cli.audit_keys import KEY_HELP, load_verifier
from cli.common import cli_container
from cli.errors import CHECK_FAILED
from cli.output import JsonOpt, command_group, print_json, print_json_lines, progress_console
from cli.signals import stop_on_signals
from cli.times import duration_param
from kernel.errors import Invalid

if TYPE_CHECKING:
    from audit.checkpoint_store import StoredCheckpoint

checkpoint_app = command_group("Signed checkpoints of the log: create, run on a schedule, export")


def _show(cp: StoredCheckpoint) -> None:
    c = cp.checkpoint
    typer.echo(f"checkpoint {cp.position}: size {c.size}, chain head {c.chain_head[:16]}…, "
               f"signed {c.timestamp.isoformat()} by key {cp.key_id}")


@checkpoint_app.command("create")
def checkpoint_create(as_json: bool = JsonOpt) -> None:
    """Build the tree to the log's head and sign a checkpoint now."""
    with cli_container() as c:
        signed = c.checkpoint_signer.sign()
    assert signed is not None
    if as_json:
        print_json(signed.to_json())
    else:
        _show(signed)


@checkpoint_app.command("run")
def checkpoint_run(every: timedelta = typer.Option("60s", parser=duration_param("s"),
                                                   metavar="DURATION",
                                                   help="How often: 60s, 5m, 1h (bare: seconds)"),
                   rounds: int = typer.Option(0, help="Stop after this many (0: until stopped)")) -> None:
    """Sign a checkpoint every interval while the log grows (SIGTERM/Ctrl-C stops it)."""
    interval, stop = every.total_seconds(), stop_on_signals()
    with cli_container() as c:
        typer.echo(f"signing every {interval:g}s with key {c.checkpoint_signer.signing_key().name}")
        c.checkpoint_signer.run(stop, interval, on_signed=_show, rounds=rounds)


@checkpoint_app.command("list")
def checkpoint_list(after: int = typer.Option(0, help="Start after this log position"),
                    limit: int = typer.Option(20), as_json: bool = JsonOpt) -> None:
    """Checkpoints signed so far, oldest first."""
    with cli_container() as c:
        page = c.checkpoint_store.page(after, limit)
    if as_json:
        print_json_lines(cp.to_json() for cp in page)
        return
    for cp in page:
        _show(cp)


@checkpoint_app.command("export")
def checkpoint_export(out: Path = typer.Option(..., "--out", help="The file to write (JSON)")) -> None:
    """Write every signed checkpoint, verbatim, for an auditor to keep elsewhere."""
    from audit.checkpoints import export_json

    with cli_container() as c:
        verifier = c.verifier
        if verifier is None:
            raise Invalid("HCP_CHECKPOINT_KEY_FILE is not set: the export names the key")
        stored = c.checkpoint_store.all()
    out.write_text(export_json([s.signed for s in stored], verifier))
    typer.echo(f"wrote {len(stored)} checkpoints to {out}; verifier key {verifier.vkey()}")


def tree(follow: bool = typer.Option(False, "--follow", help="Keep following the log")) -> None:
    """Build the Merkle tree up to the log's head (what `hcp relay` also does as it runs)."""
    from rich.progress import Progress

    with cli_container() as c, Progress(console=progress_console(), transient=True) as bar:
        head = c.store.head()
        task = bar.add_task("merkle tree", total=max(head, 1), completed=c.tree_builder.size())
        size = c.tree_builder.build(on_progress=lambda n: bar.update(task, completed=n))
        typer.echo(f"tree at {size} of {head} events")
        if follow:
            c.tree_builder.follow(stop_on_signals())


def proof(event_id: uuid.UUID = typer.Argument(..., help="The event to prove"),
          checkpoint: int = typer.Option(None, help="Against this checkpoint (default: the latest)"),
          out: Path = typer.Option(None, "--out", help="Write the bundle here (default: stdout)")) -> None:
    """An inclusion proof of the event in a signed checkpoint, as a JSON bundle."""
    with cli_container() as c:
        answer = c.proofs.inclusion(event_id, checkpoint)
    _write({"event_id": answer.event_id, "position": answer.position,
            "checkpoint_position": answer.checkpoint_position, **answer.bundle.to_json()}, out)


def consistency(old: int = typer.Argument(..., help="The older checkpoint"),
                new: int = typer.Argument(None, help="The newer one (default: the latest)"),
                out: Path = typer.Option(None, "--out")) -> None:
    """A consistency proof between two signed checkpoints, as a JSON bundle."""
    with cli_container() as c:
        bundle = c.proofs.consistency(old, new)
    _write(bundle.to_json(), out)


def prove(bundle: Path = typer.Argument(..., help="A bundle from `hcp audit proof` or `consistency`"),
          key: str = typer.Option(..., help=KEY_HELP.split(";")[0]),
          key_name: str = typer.Option(None, help="The key's name, for a PEM or OpenSSH key")) -> None:
    """Check a proof offline with only the log's public key; exit 1 if it does not hold."""
    from audit.checkpoints import CheckpointError
    from audit.verify import (
        AuditError,
        ConsistencyBundle,
        InclusionBundle,
        verify_consistency_bundle,
        verify_inclusion_bundle,
    )

    verifier = load_verifier(key, key_name)
    assert verifier is not None
    try:
        doc = json.loads(bundle.read_text())
        if "event_hash" in doc:
            cp = verify_inclusion_bundle(InclusionBundle.from_json(doc), verifier)
            typer.echo(f"proven: event {doc['event_hash'][:16]}… is at position {doc['leaf_index'] + 1} "
                       f"of the log of {cp.size} events signed {cp.timestamp.isoformat()}")
        else:
            old, new = verify_consistency_bundle(ConsistencyBundle.from_json(doc), verifier)
            typer.echo(f"proven: the log of {old.size} events signed {old.timestamp.isoformat()} is a "
                       f"prefix of the log of {new.size} signed {new.timestamp.isoformat()}")
    except (AuditError, CheckpointError, ValueError) as exc:
        typer.echo(f"NOT PROVEN: {exc}")
        raise typer.Exit(CHECK_FAILED) from None


def _write(doc: dict[str, Any], out: Path | None) -> None:
    text = json.dumps(doc, indent=2) + "\n"
    if out is None:
        typer.echo(text, nl=False)
    else:
        out.write_text(text)
        typer.echo(f"wrote {out}")


def register(app: typer.Typer) -> None:
    app.add_typer(checkpoint_app, name="checkpoint")
    for command in (tree, proof, consistency, prove):
        app.command()(command)
