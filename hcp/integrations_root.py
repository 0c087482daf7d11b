"""The integrations' services (webhooks, OTLP in, evaluation results out), built from the
container on first use like every other service (``Container.integrations``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from events.relay_lock import RelayLock
from integrations.otlp.evaluations import EvaluationExporter
from integrations.webhooks.deliverer import Backoff, Deliverer
from integrations.webhooks.deliveries import DeliveryLog
from integrations.webhooks.secrets import SecretBox
from integrations.webhooks.sender import PinnedSender
from integrations.webhooks.subscriptions import Subscriptions
from integrations.webhooks.targets import TargetPolicy, within

if TYPE_CHECKING:
    from hcp.bootstrap import Container


log = logging.getLogger(__name__)
# How long making a subscription waits for its host to resolve (the request's thread waits).
RESOLVE_AT_CREATION_S = 3.0


@dataclass
class Integrations:
    container: Container

    @cached_property
    def subscriptions(self) -> Subscriptions:
        c, s = self.container, self.container.settings
        return Subscriptions(c.engine, c.store, SecretBox(s.resolved_webhook_key_file),
                             self.targets(RESOLVE_AT_CREATION_S), s.webhook_max_subscriptions)

    def targets(self, resolve_s: float) -> TargetPolicy:
        """Where webhooks may go: public hosts and HCP_WEBHOOK_ALLOWED_TARGETS, each name
        resolved within ``resolve_s``."""
        return TargetPolicy.allowing(self.container.settings.webhook_allowed_targets,
                                     within(resolve_s))

    @cached_property
    def deliveries(self) -> DeliveryLog:
        return DeliveryLog(self.container.engine)

    def deliverer(self) -> Deliverer:
        """A new deliverer (each with its own HTTP client and retry times)."""
        c, s = self.container, self.container.settings
        sender = PinnedSender(self.targets(s.webhook_timeout_s), s.webhook_timeout_s)
        return Deliverer(c.engine, c.store, self.subscriptions, self.deliveries, c.checkpoints,
                         sender,
                         Backoff(s.webhook_max_attempts, s.webhook_backoff_s, s.webhook_backoff_max_s))

    def deliver(self, stop: threading.Event, on_wait: Callable[[], None] | None = None) -> None:
        """Deliver webhooks until ``stop`` is set, as the one deliverer of the database
        (a standby waits for the lock; a lost lock makes it a standby again)."""
        lock = RelayLock(self.container.engine, "webhooks")
        deliverer = self.deliverer()
        try:
            while not stop.is_set():
                if not lock.acquire(stop, on_wait=on_wait):
                    return
                deliverer.run(stop, still_sending=lock.held)
        finally:
            lock.release()
            deliverer.sender.close()

    def evaluation_exporter(self) -> EvaluationExporter | None:
        """The exporter of reward records to HCP_OTLP_EVALUATIONS_ENDPOINT (None: not set)."""
        c, s = self.container, self.container.settings
        if not s.otlp_evaluations_endpoint:
            return None
        return EvaluationExporter(c.rewards, c.store, c.checkpoints, s.otlp_evaluations_endpoint,
                                  s.otlp_evaluations_headers)
