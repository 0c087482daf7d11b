"""`hcp relay`: publish the outbox (the event log, and any other feed) to Kafka."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import typer

from cli.errors import CHECK_FAILED
from cli.signals import stop_on_signals
from cli.tree_process import TreeBuilderProcess
from kernel.errors import Invalid

if TYPE_CHECKING:
    from audit.builder import TreeBuilder
    from events.kafka_producers import ClosablePublisher
    from events.relay import OutboxFeed, Progress, RelayLoop


def relay(
    once: bool = typer.Option(False, "--once", help="Publish what is committed now, then exit"),
    page_size: int = typer.Option(1000, help="Events read and published per round trip"),
    partitions: int = typer.Option(3, help="Partitions of topics the relay has to create"),
) -> None:
    """Publish committed events to Kafka in position order, resuming from the checkpoint."""
    from events.checkpoints import Checkpoints
    from events.kafka_io import ensure_topics
    from events.kafka_producers import make_publisher
    from events.relay import RelayLoop
    from events.relay_lock import LockLost, RelayLock
    from events.relay_wake import OutboxWaker
    from hcp.bootstrap import bootstrap

    container = bootstrap()
    settings = container.settings
    if not settings.kafka_bootstrap:
        container.close()
        raise Invalid("HCP_KAFKA_BOOTSTRAP is not set; in embedded mode consumers read "
                      "the database log directly and there is nothing to relay")
    feeds = container.outbox_feeds()
    stop = stop_on_signals()
    lock = RelayLock(container.engine, settings.topic_prefix)
    publisher: ClosablePublisher | None = None
    try:
        while not stop.is_set():
            if not lock.acquire(stop, wait=not once, on_wait=lambda: typer.echo(
                    "standby: another relay is publishing this outbox; waiting to take over")):
                if not stop.is_set():
                    typer.echo("another relay is publishing this outbox; nothing to do")
                return
            if publisher is None:
                ensure_topics(settings.kafka_bootstrap, [f.topic for f in feeds], partitions)
                publisher = make_publisher(settings.kafka_producer, settings.kafka_bootstrap)
            loop = RelayLoop(feeds, publisher, Checkpoints(container.engine),
                             page_size=page_size, before_publish=lock.check,
                             waker=OutboxWaker(container.engine), fallback_s=settings.relay_fallback_s,
                             linger_s=settings.relay_linger_s, idle_interval=settings.relay_poll_s)
            try:
                _publish(loop, stop, once, feeds, settings.kafka_bootstrap, container.tree_builder)
            except LockLost:
                # PostgreSQL restarted (or our session was killed): another relay may hold
                # the lock now. Publishing on would duplicate its pages; stand by instead.
                typer.echo("lost the relay lock (the database session ended); standing by")
                if once:
                    raise typer.Exit(CHECK_FAILED) from None
                continue
            return
    finally:
        if publisher is not None:
            publisher.close()
        lock.release()
        container.close()


def _publish(loop: RelayLoop, stop: threading.Event, once: bool, feeds: list[OutboxFeed],
             bootstrap: str, tree: TreeBuilder) -> None:
    if once:
        for p in loop.drain():
            _echo(p)
        tree.build()
        return
    # The active relay also keeps the Merkle tree at the log's head, so proofs and
    # checkpoints never wait for a catch-up; it stops with the publishing (a relay that
    # lost its lock stands by, and the new active one builds). A process of its own: as a
    # thread its hashing held the GIL the relay needs after every database or Kafka call.
    builder = TreeBuilderProcess()
    typer.echo(f"relaying {', '.join(f.topic for f in feeds)} from {bootstrap}")
    builder.start()
    try:
        loop.run(stop, on_progress=_echo)
    finally:
        builder.stop()
    typer.echo("stopped: last page acknowledged and checkpointed")


def _echo(p: Progress) -> None:
    typer.echo(f"published {p.published} to {p.topic}, at position {p.position}", color=False)


def register(app: typer.Typer) -> None:
    app.command()(relay)
