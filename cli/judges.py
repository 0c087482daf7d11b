"""`hcp judges …`: the subjects waiting for a judge model, and why (docs/contract-authoring.md)."""

from __future__ import annotations

import json

import typer

from cli.common import cli_container
from cli.output import command_group

app = command_group("Judge models: the subjects waiting for a verdict, and why")


@app.command("waiting")
def waiting(every: bool = typer.Option(False, "--all", help="Also those judged since"),
            limit: int = typer.Option(100, min=1, max=10_000, help="At most this many"),
            as_json: bool = typer.Option(False, "--json", help="As JSON")) -> None:
    """Subjects whose reward waits for a judge model's verdict (oldest first): the
    contract version, how many asks failed, the last failure and when it is asked again."""
    with cli_container() as c:
        rows = c.judge_backlog.waiting(status=None if every else "waiting", limit=limit)
        counts = c.judge_backlog.counts()
    if as_json:
        typer.echo(json.dumps({"counts": counts, "subjects": [r.to_json() for r in rows]}, indent=2))
        return
    typer.echo(f"{counts['waiting']} waiting, {counts['done']} judged since they waited")
    for row in rows:
        typer.echo(f"{row.subject_id}  {row.contract_name}@{row.contract_version}  {row.status}  "
                   f"attempts {row.attempts}  next {row.next_at:%Y-%m-%d %H:%M:%S}Z")
        if row.last_error:
            typer.echo(f"    {row.last_error}")
