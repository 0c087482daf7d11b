"""`hcp relay`: publish the outbox (the event log, and any other feed) to Kafka."""

from __future__ import annotations

import typer

from cli.common import stop_on_signals
from events.checkpoints import Checkpoints
from events.kafka_io import ensure_topics
from events.kafka_producers import make_publisher
from events.relay import Progress, RelayLoop
from events.relay_lock import RelayLock
from hcp.bootstrap import bootstrap


def relay(
    once: bool = typer.Option(False, "--once", help="Publish what is committed now, then exit"),
    page_size: int = typer.Option(1000, help="Events read and published per round trip"),
    partitions: int = typer.Option(3, help="Partitions of topics the relay has to create"),
) -> None:
    """Publish committed events to Kafka in position order, resuming from the checkpoint."""
    container = bootstrap()
    settings = container.settings
    if not settings.kafka_bootstrap:
        typer.echo("error: HCP_KAFKA_BOOTSTRAP is not set; in embedded mode consumers read "
                   "the database log directly and there is nothing to relay", err=True)
        raise typer.Exit(2)
    feeds = container.outbox_feeds()
    stop = stop_on_signals()
    lock = RelayLock(container.engine, settings.topic_prefix)
    if not lock.acquire(stop, wait=not once, on_wait=lambda: typer.echo(
            "standby: another relay is publishing this outbox; waiting to take over")):
        typer.echo("another relay is publishing this outbox; nothing to do")
        container.close()
        return
    ensure_topics(settings.kafka_bootstrap, [f.topic for f in feeds], partitions)
    publisher = make_publisher(settings.kafka_producer, settings.kafka_bootstrap)
    loop = RelayLoop(feeds, publisher, Checkpoints(container.engine), page_size=page_size)
    try:
        if once:
            for p in loop.drain():
                _echo(p)
        else:
            typer.echo(f"relaying {', '.join(f.topic for f in feeds)} "
                       f"from {settings.kafka_bootstrap}")
            loop.run(stop, on_progress=_echo)
            typer.echo("stopped: last page acknowledged and checkpointed")
    finally:
        publisher.close()
        lock.release()
        container.close()


def _echo(p: Progress) -> None:
    typer.echo(f"published {p.published} to {p.topic}, at position {p.position}", color=False)


def register(app: typer.Typer) -> None:
    app.command()(relay)
