"""The relay as `hcp relay` runs it (events feed, RelayLoop, checkpoints), with the producer
chosen on the command line, for the ingest benchmark.

    python bench/relay_runner.py DATABASE_URL BOOTSTRAP TOPIC PRODUCER [PAGE_SIZE]

`hcp relay` reads HCP_KAFKA_PRODUCER only once hcp/cli/relay.py builds its publisher with
``events.kafka_producers.make_publisher``; until then this runner is how the benchmark
measures both producers. It skips the standby lock and the rewards feed (nothing to
arbitrate, no rewards in this benchmark). SIGTERM finishes the page in flight, then exits.
"""

from __future__ import annotations

import signal
import sys
import threading

from events.checkpoints import Checkpoints
from events.kafka_io import ensure_topics
from events.kafka_producers import make_publisher
from events.relay import EventsFeed, RelayLoop
from events.store import SqlEventStore
from hcp.db import make_engine


def main(url: str, bootstrap: str, topic: str, producer: str, page_size: int = 1000) -> None:
    engine = make_engine(url)
    ensure_topics(bootstrap, [topic])
    publisher = make_publisher(producer, bootstrap)
    loop = RelayLoop([EventsFeed(SqlEventStore(engine), topic)], publisher, Checkpoints(engine),
                     page_size=page_size)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        loop.run(stop)
    finally:
        publisher.close()
        engine.dispose()


if __name__ == "__main__":
    main(*sys.argv[1:5], *(int(a) for a in sys.argv[5:6]))
