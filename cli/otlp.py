"""`hcp otlp …`: evaluation results out, as OTLP log records (docs/integrations.md)."""

from __future__ import annotations

import typer

from cli.common import cli_container
from cli.output import command_group

app = command_group("OpenTelemetry: export evaluation results to an OTLP endpoint")


@app.command("export-evaluations")
def export_evaluations(once: bool = typer.Option(False, "--once", help="Export what is stored now, "
                                                 "then exit")) -> None:
    """Export every reward record as a gen_ai.evaluation.result log record to
    HCP_OTLP_EVALUATIONS_ENDPOINT, resuming from its checkpoint."""
    from cli.signals import stop_on_signals
    from kernel.errors import Invalid

    with cli_container() as c:
        exporter = c.integrations.evaluation_exporter()
        if exporter is None:
            raise Invalid("HCP_OTLP_EVALUATIONS_ENDPOINT is not set: there is nowhere to export to")
        try:
            if once:
                total = 0
                while exported := exporter.step():
                    total += exported
                typer.echo(f"exported {total} evaluation results")
                return
            exporter.run(stop_on_signals())
        finally:
            exporter.close()
