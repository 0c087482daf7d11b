"""`hcp lineage export openlineage`: run events to a file, an HTTP endpoint or Kafka."""

from __future__ import annotations

import json
from typing import Any

import typer

from cli.common import cli_container
from cli.output import command_group, progress_console
from cli.signals import stop_on_signals


def _transport(configured: dict[str, Any], file: str | None, url: str | None, api_key: str | None,
               kafka: str | None, topic: str) -> dict[str, Any]:
    if file:
        return {"type": "file", "log_file_path": file, "append": True}
    if url:
        auth = {"type": "api_key", "apiKey": api_key} if api_key else {}
        return {"type": "http", "url": url, "auth": auth}
    if kafka:
        return {"type": "kafka", "topic": topic, "config": {"bootstrap.servers": kafka},
                "messageKey": None}
    return configured


def openlineage(
    file: str = typer.Option(None, "--file", help="Append events to this file, one JSON a line"),
    url: str = typer.Option(None, "--url", help="POST events to <url>/api/v1/lineage"),
    api_key: str = typer.Option(None, "--api-key", help="Bearer token for --url"),
    kafka: str = typer.Option(None, "--kafka", help="Kafka bootstrap servers"),
    topic: str = typer.Option("openlineage", help="Kafka topic for --kafka"),
    from_start: bool = typer.Option(False, "--from-start", help="Ignore the saved checkpoint"),
    follow: bool = typer.Option(False, "--follow", help="Keep exporting as the log grows"),
    interval: float = typer.Option(5.0, help="Seconds between polls with --follow"),
) -> None:
    """Evaluation, manifest-freezing and training run events since the last export.

    The transport is HCP_OPENLINEAGE_TRANSPORT (JSON) unless --file, --url or --kafka is given.
    """
    from audit.exports.emit import client_for, export, sink_checkpoint

    stop = stop_on_signals()
    err = progress_console()
    with cli_container() as parts:
        config = _transport(parts.settings.openlineage_transport, file, url, api_key, kafka, topic)
        client, checkpoint = client_for(config), sink_checkpoint(config)
        checkpoints = parts.checkpoints
        after = 0 if from_start else checkpoints.load(checkpoint)
        while True:
            report = export(parts.openlineage, client, after,
                            save=lambda p: checkpoints.save(checkpoint, p))
            if report.sent:
                err.print(f"sent {report.sent} run event(s) via {config['type']}; "
                          f"log position {report.last_position}")
            after = report.last_position
            if not follow or stop.wait(interval):
                break
    typer.echo(json.dumps({"transport": config["type"], "last_position": after}))


def register_exports(app: typer.Typer) -> None:
    export_app = command_group("Lineage in standard formats")
    export_app.command("openlineage")(openlineage)
    app.add_typer(export_app, name="export")
