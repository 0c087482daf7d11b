"""The webhook deliverer: a follower of the log with a checkpoint per subscription.

For each active subscription, in log order: read the subscribed events after its checkpoint,
POST each (signed, ``integrations.webhooks.signing``; sent by ``integrations.webhooks.sender``
within one deadline), and only after a 2xx move the checkpoint past it, in the transaction
that records the attempt. A crash between the POST and that commit sends the event again
after restart (at least once; receivers dedupe by ``webhook-id``); nothing is skipped,
because the checkpoint never passes an event that was not acknowledged. A failure stops
that subscription (later events wait: order holds) until its backoff has passed; after
``max_attempts`` failures at one event the subscription is disabled by a
``webhook.disabled`` event and its checkpoint stays where it stopped, so enabling it again
resumes there. Redeliveries asked for by the API are sent first, outside the order, and
touch no checkpoint.

**One lane per subscription** (``run``): each active subscription is delivered by a thread
of its own, so a receiver that is slow, or never answers, holds only its own lane, and for
at most one attempt's deadline at a time; every other subscription's deliveries go on
beside it (Stripe's and Svix's per-endpoint queues). A lane holds no database connection
while it sends. How many lanes a tenant may have is bounded by
``HCP_WEBHOOK_MAX_SUBSCRIPTIONS``.

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

from sqlalchemy.engine import Engine

from events.checkpoints import Checkpoints
from events.model import RecordedEvent
from events.store import EventStore
from integrations.webhooks.body import delivery_body, visible_to
from integrations.webhooks.deliveries import DeliveryLog, Outcome
from integrations.webhooks.model import Subscription, SubscriptionNotFound
from integrations.webhooks.projections import ACTIVE
from integrations.webhooks.signing import headers
from integrations.webhooks.subscriptions import Subscriptions
from integrations.webhooks.topics import TOPICS, viewer

log = logging.getLogger(__name__)


def checkpoint_name(subscription_id: str) -> str:
    return f"webhook:{subscription_id}"


class Sender(Protocol):
    deadline_s: float

    def send(self, url: str, headers: dict[str, str], body: bytes) -> Outcome: ...

    def close(self) -> None: ...


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
        self._retry_at: dict[str, float] = {}  # each lane writes only its own subscription's

    def step(self) -> int:
        """One pass over every active subscription, one after another (``hcp webhooks
        deliver --once``); how many deliveries succeeded."""
        return sum(self._step_subscription(s) for s in self.subscriptions.active())

    def run(self, stop: threading.Event, idle_s: float = 0.2,
            still_sending: Callable[[], bool] = lambda: True) -> None:
        """Deliver until ``stop`` is set (or ``still_sending`` says no: the lock was lost),
        each active subscription in a lane of its own; a database failure is retried after
        a pause. Returns once every lane has finished its attempt in flight."""
        halt = threading.Event()
        lanes: dict[str, threading.Thread] = {}
        try:
            while not stop.is_set() and still_sending():
                try:
                    active = self.subscriptions.active()
                except Exception:  # the database restarting, say: the checkpoints hold
                    log.exception("webhook subscriptions unreadable; retrying")
                    stop.wait(2.0)
                    continue
                for sub in active:
                    lane = lanes.get(sub.subscription_id)
                    if lane is None or not lane.is_alive():
                        lanes[sub.subscription_id] = self._start_lane(sub.subscription_id, halt, idle_s)
                stop.wait(idle_s)
        finally:
            halt.set()
            for lane in lanes.values():
                lane.join(self.sender.deadline_s + 10)

    def _start_lane(self, subscription_id: str, halt: threading.Event, idle_s: float) -> threading.Thread:
        lane = threading.Thread(target=self._lane, args=(subscription_id, halt, idle_s),
                                name=f"hcp-webhook-{subscription_id[:8]}", daemon=True)
        lane.start()
        return lane

    def _lane(self, subscription_id: str, halt: threading.Event, idle_s: float) -> None:
        """Deliver one subscription until ``halt``, or until it is no longer active."""
        while not halt.is_set():
            try:
                sub = self.subscriptions.get(subscription_id)
            except SubscriptionNotFound:  # deleted
                return
            if sub.status != ACTIVE:
                return
            try:
                delivered = self._step_subscription(sub, halt)
            except Exception:
                log.exception("webhook delivery of %s failed; retrying", subscription_id)
                halt.wait(2.0)
                continue
            if not delivered:
                halt.wait(idle_s)

    def _step_subscription(self, sub: Subscription, halt: threading.Event | None = None) -> int:
        key = self.subscriptions.signing_key(sub.subscription_id)
        done = self._redeliver(sub, key)
        if self._retry_at.get(sub.subscription_id, 0.0) > self.clock():
            return done
        name = checkpoint_name(sub.subscription_id)
        after = max(self.checkpoints.load(name), sub.from_position)
        for event in self.store.read_types(sub.event_types, after, self.page):
            if halt is not None and halt.is_set():
                break
            if not visible_to(sub.tenant, event) or event.type not in TOPICS:
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
            if event is None or event.type not in TOPICS:
                continue
            outcome = self._send(sub, key, event)
            self.deliveries.finish(queued.delivery_id, outcome)
            done += int(outcome.ok)
        return done

    def _send(self, sub: Subscription, key: bytes, event: RecordedEvent) -> Outcome:
        shown = TOPICS[event.type].view(event.payload, viewer(sub.subscription_id, sub.tenant,
                                                               sub.event_types))
        body = delivery_body(event, shown)
        return self.sender.send(sub.url, headers(key, str(event.event_id), int(time.time()), body), body)
