"""Getting a run to a worker: a Celery task on Redis, or a thread of this process."""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from celery import Celery

from trainer.celery_app import TRAIN_TASK
from trainer.runner import RunnerConfig, RunOutcome, run_training

if TYPE_CHECKING:
    from trainer.service import TrainerParts

log = logging.getLogger(__name__)


class CeleryDispatcher:
    def __init__(self, app: Celery) -> None:
        self.app = app

    def dispatch(self, run_id: str) -> None:
        # task_id = run_id: the broker, the worker logs and the run row all name it alike.
        self.app.send_task(TRAIN_TASK, args=[run_id], task_id=run_id)


class InProcessDispatcher:
    """Embedded mode: each run trains in a thread of this process (no broker).

    Runs take turns: training sets process-wide torch state (the RNG, deterministic
    algorithms), so two at once in one process would make each other irreproducible.
    """

    _one_at_a_time = threading.Lock()

    def __init__(self, parts: Callable[[], TrainerParts], config: RunnerConfig | None = None) -> None:
        self._parts, self.config = parts, config or RunnerConfig()
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
            outcome = run_training(self._parts(), run_id, self.worker, self.config)
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
