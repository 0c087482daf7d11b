"""A worker's hold on a run while it trains: renewed from a thread, with progress."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Protocol

from trainer.runs.model import LeaseLost

log = logging.getLogger(__name__)
PROGRESS_EVERY = 0.5  # seconds between progress writes


class Heartbeats(Protocol):
    def heartbeat(self, run_id: str, owner: str, lease_seconds: float,
                  step: int | None = None, loss: float | None = None,
                  total: int | None = None) -> bool: ...


class Lease:
    """Renews the run's lease from a thread while training runs; records progress.

    ``progress`` is the training loop's step callback: it raises ``LeaseLost`` once a
    renewal found the run taken over, so a worker that lost its run stops early.
    """

    def __init__(self, runs: Heartbeats, run_id: str, owner: str, seconds: float) -> None:
        self.runs, self.run_id, self.owner, self.seconds = runs, run_id, owner, seconds
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._last_progress = 0.0
        self._thread = threading.Thread(target=self._renew, name=f"lease-{run_id}", daemon=True)

    def __enter__(self) -> Lease:
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._thread.join()

    def _renew(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            self._beat()

    def _beat(self, step: int | None = None, loss: float | None = None,
              total: int | None = None) -> None:
        try:
            if not self.runs.heartbeat(self.run_id, self.owner, self.seconds, step, loss, total):
                self.lost.set()
        except Exception:  # a database blip must not kill training; the lease may expire
            log.exception("lease renewal of run %s failed", self.run_id)

    def progress(self, step: int, total: int, loss: float) -> None:
        if self.lost.is_set():
            raise LeaseLost(f"run {self.run_id} was taken over; stopping at step {step}")
        now = time.monotonic()
        # At most a few writes a second: a tiny model takes milliseconds a step.
        if step == 1 or step == total or now - self._last_progress >= PROGRESS_EVERY:
            self._last_progress = now
            self._beat(step, loss, total)
