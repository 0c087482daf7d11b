"""Getting a run to a worker: a Celery task on Redis, or a thread of this process."""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Callable
from typing import Protocol

from celery import Celery

from trainer.runs.model import RunOutcome

log = logging.getLogger(__name__)

TRAIN_TASK = "hcp.train"
EVALUATE_TASK = "hcp.evaluate_triggers"
REDISPATCH_TASK = "hcp.redispatch"

# Trains one run as ``worker`` (the runner, with everything it needs bound in).
TrainRun = Callable[[str, str], RunOutcome]


class DispatchFailed(RuntimeError):
    """The run could not be handed to a worker (the broker is unreachable). The run stays
    queued in the database, which is the outbox: ``Triggers.redispatch`` sends it later."""


class Dispatcher(Protocol):
    def dispatch(self, run_id: str) -> None:
        """Hand the run to a worker; it may arrive twice (the worker claims it first).

        Raises:
            DispatchFailed: the broker did not take it.
        """


class CeleryDispatcher:
    def __init__(self, app: Celery) -> None:
        self.app = app

    def dispatch(self, run_id: str) -> None:
        from kombu.exceptions import OperationalError

        # task_id = run_id: the broker, the worker logs and the run row all name it alike.
        try:
            self.app.send_task(TRAIN_TASK, args=[run_id], task_id=run_id)
        except (OperationalError, OSError) as exc:
            raise DispatchFailed(f"the broker is unreachable ({exc})") from exc


class InProcessDispatcher:
    """Embedded mode: each run trains in a thread of this process (no broker).

    Runs take turns: training sets process-wide torch state (the RNG, deterministic
    algorithms), so two at once in one process would make each other irreproducible.
    """

    _one_at_a_time = threading.Lock()

    def __init__(self, train: TrainRun) -> None:
        self._train = train
        self.worker = f"in-process:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._threads: list[threading.Thread] = []
        self.outcomes: dict[str, RunOutcome] = {}

    def dispatch(self, run_id: str) -> None:
        thread = threading.Thread(target=self._run, args=(run_id,), name=f"train-{run_id[:8]}",
                                  daemon=True)
        self._threads.append(thread)
        thread.start()

    def run_now(self, run_id: str) -> RunOutcome:
        """Train in the calling thread (the CLI, which shows progress meanwhile)."""
        with self._one_at_a_time:
            outcome = self._train(run_id, self.worker)
        self.outcomes[run_id] = outcome
        return outcome

    def join(self, timeout: float | None = None) -> None:
        for thread in list(self._threads):
            thread.join(timeout)

    def _run(self, run_id: str) -> None:
        try:
            self.run_now(run_id)
        except Exception:
            log.exception("in-process training of run %s crashed", run_id)
