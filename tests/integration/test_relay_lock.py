"""One relay publishes an outbox at a time; a standby takes over when it goes away."""

from __future__ import annotations

import threading

from events.relay_lock import RelayLock
from kernel.db import make_engine


def test_a_second_relay_waits_until_the_first_lets_go(postgres_url):
    engine = make_engine(postgres_url)
    never = threading.Event()
    first, second = RelayLock(engine, "hcp"), RelayLock(engine, "hcp")
    assert first.acquire(never)
    assert not second.acquire(never, wait=False)  # `hcp relay --once` gives up at once

    took_over = threading.Event()
    standby = threading.Thread(target=lambda: second.acquire(never, poll_s=0.05) and took_over.set())
    standby.start()
    assert not took_over.wait(0.3)  # still standing by while the first holds the outbox
    first.release()  # (a killed relay's connection drops the lock the same way)
    assert took_over.wait(5)
    standby.join()
    second.release()
    engine.dispose()


def test_other_prefixes_relay_independently(postgres_url):
    engine = make_engine(postgres_url)
    never = threading.Event()
    a, b = RelayLock(engine, "hcp"), RelayLock(engine, "staging")
    assert a.acquire(never) and b.acquire(never, wait=False)
    a.release(), b.release()
    engine.dispose()
