"""The webhook deliverer: a follower of the log with a checkpoint per subscription.

For each active subscription, in log order: read the subscribed events after its checkpoint,
POST each (signed, ``integrations.webhooks.signing``), and only after a 2xx move the
checkpoint past it, in the transaction that records the attempt. A crash between the POST
and that commit sends the event again after restart (at least once; receivers dedupe by
``webhook-id``); nothing is skipped, because the checkpoint never passes an event that was
not acknowledged. A failure stops that subscription (later events wait: order holds) until
its backoff has passed; after ``max_attempts`` failures at one event the subscription is
disabled by a ``webhook.disabled`` event and its checkpoint stays where it stopped, so
enabling it again resumes there. Redeliveries asked for by the API are sent first, outside
the order, and touch no checkpoint.

One deliverer per database sends (a session advisory lock, like the relay's): two would
send everything twice and race on the checkpoints.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import httpx
from sqlalchemy.engine import Engine

from events.checkpoints import Checkpoints
from events.model import RecordedEvent
from events.store import EventStore
from integrations.webhooks.body import delivery_body, visible_to
from integrations.webhooks.deliveries import DeliveryLog, Outcome
from integrations.webhooks.model import Subscription
from integrations.webhooks.signing import headers
from integrations.webhooks.subscriptions import Subscriptions

log = logging.getLogger(__name__)


def checkpoint_name(subscription_id: str) -> str:
    return f"webhook:{subscription_id}"


class Sender(Protocol):
    def send(self, url: str, headers: dict[str, str], body: bytes) -> Outcome: ...

    def close(self) -> None: ...


class HttpSender:
    """POSTs with httpx; a 2xx is success, anything else (or no answer) a failure."""

    def __init__(self, timeout_s: float) -> None:
        self.client = httpx.Client(timeout=timeout_s, follow_redirects=False)

    def send(self, url: str, headers: dict[str, str], body: bytes) -> Outcome:
        started = time.perf_counter()
        try:
            answer = self.client.post(url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            return Outcome(False, None, f"{type(exc).__name__}: {exc}"[:500], _ms(started))
        ok = 200 <= answer.status_code < 300
        error = None if ok else f"HTTP {answer.status_code}: {answer.text[:200]}"
        return Outcome(ok, answer.status_code, error, _ms(started))

    def close(self) -> None:
        self.client.close()


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


@dataclass(frozen=True)
class Backoff:
    max_attempts: int = 12
    first_s: float = 1.0
    most_s: float = 300.0

    def wait_s(self, failures: int) -> float:
        return min(self.most_s, self.first_s * 2 ** max(0, failures - 1))


class Deliverer:
    def __init__(self, engine: Engine, store: EventStore, subscriptions: Subscriptions,
                 deliveries: DeliveryLog, checkpoints: Checkpoints, sender: Sender,
                 backoff: Backoff, page: int = 100, clock: Callable[[], float] = time.monotonic) -> None:
        self.engine, self.store, self.subscriptions = engine, store, subscriptions
        self.deliveries, self.checkpoints, self.sender = deliveries, checkpoints, sender
        self.backoff, self.page, self.clock = backoff, page, clock
        self._retry_at: dict[str, float] = {}

    def step(self) -> int:
        """One pass over every active subscription; how many deliveries succeeded."""
        return sum(self._step_subscription(s) for s in self.subscriptions.active())

    def run(self, stop: threading.Event, idle_s: float = 0.2,
            still_sending: Callable[[], bool] = lambda: True) -> None:
        """Deliver until ``stop`` is set (or ``still_sending`` says no: the lock was lost); a
        database failure is retried after a pause."""
        while not stop.is_set() and still_sending():
            try:
                delivered = self.step()
            except Exception:  # the database restarting, say: the checkpoints hold
                log.exception("webhook delivery step failed; retrying")
                stop.wait(2.0)
                continue
            if not delivered:
                stop.wait(idle_s)

    def _step_subscription(self, sub: Subscription) -> int:
        key = self.subscriptions.signing_key(sub.subscription_id)
        done = self._redeliver(sub, key)
        if self._retry_at.get(sub.subscription_id, 0.0) > self.clock():
            return done
        name = checkpoint_name(sub.subscription_id)
        after = max(self.checkpoints.load(name), sub.from_position)
        for event in self.store.read_types(sub.event_types, after, self.page):
            if not visible_to(sub.tenant, event):
                self.checkpoints.save(name, event.position)
                continue
            if not self._deliver(sub, key, event, name):
                break
            done += 1
        return done

    def _deliver(self, sub: Subscription, key: bytes, event: RecordedEvent, name: str) -> bool:
        outcome = self._send(sub, key, event)
        attempt = self.deliveries.attempts(sub.subscription_id, str(event.event_id)) + 1
        with self.engine.begin() as conn:  # the attempt and the checkpoint commit together
            self.deliveries.record(sub.subscription_id, event, attempt, outcome, conn)
            if outcome.ok:
                self.checkpoints.save(name, event.position, conn)
        if outcome.ok:
            self._retry_at.pop(sub.subscription_id, None)
            return True
        if attempt >= self.backoff.max_attempts:
            log.warning("webhook %s disabled after %d failed attempts", sub.subscription_id, attempt)
            self.subscriptions.disable(sub, f"{attempt} failed attempts in a row at event "
                                       f"{event.event_id}: {outcome.error}", attempt, str(event.event_id))
        else:
            self._retry_at[sub.subscription_id] = self.clock() + self.backoff.wait_s(attempt)
        return False

    def _redeliver(self, sub: Subscription, key: bytes) -> int:
        done = 0
        for queued in self.deliveries.queued(sub.subscription_id):
            event = self.store.get_many([queued.event_id]).get(queued.event_id)
            if event is None:
                continue
            outcome = self._send(sub, key, event)
            self.deliveries.finish(queued.delivery_id, outcome)
            done += int(outcome.ok)
        return done

    def _send(self, sub: Subscription, key: bytes, event: RecordedEvent) -> Outcome:
        body = delivery_body(event)
        return self.sender.send(sub.url, headers(key, str(event.event_id), int(time.time()), body), body)
