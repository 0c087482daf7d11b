"""The Celery tasks: thin wrappers that hand a run id to ``run_training``."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from typing import Any

from celery import Celery, Task

from trainer.celery_app import EVALUATE_TASK, TRAIN_TASK
from trainer.runner import RunnerConfig, run_training

log = logging.getLogger(__name__)
_process: dict[str, Any] = {}  # this worker process's parts, built on its first task


def _parts(app: Celery) -> Any:
    # Built lazily in the process that runs the task (after a prefork fork), never at
    # import: an engine must not be shared across processes.
    if _process.get("pid") != os.getpid():
        from hcp.bootstrap import bootstrap
        from trainer.dispatch import CeleryDispatcher
        from trainer.service import build_parts

        container = bootstrap(app.conf.hcp_settings)
        _process.update(pid=os.getpid(), parts=build_parts(container, CeleryDispatcher(app)),
                        worker=f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}")
    return _process["parts"]


def register_tasks(app: Celery) -> None:
    @app.task(name=TRAIN_TASK, bind=True, acks_late=True, reject_on_worker_lost=True,
              max_retries=None)
    def train(self: Task, run_id: str) -> str:
        parts = _parts(self.app)
        config = RunnerConfig(lease_seconds=float(self.app.conf.hcp_lease_seconds),
                              max_attempts=int(self.app.conf.hcp_max_attempts))
        outcome = run_training(parts, run_id, _process["worker"], config)
        log.info("run %s: %s %s", run_id, outcome.outcome, outcome.adapter_id or outcome.error or "")
        if outcome.outcome == "busy":
            # Another live worker holds the run (a duplicate delivery): look again once its
            # lease would have expired, in case that worker dies before finishing.
            raise self.retry(countdown=max(1.0, outcome.retry_in + 1.0))
        return outcome.outcome

    @app.task(name=EVALUATE_TASK, bind=True)
    def evaluate_triggers(self: Task) -> list[dict[str, Any]]:
        parts = _parts(self.app)
        results = parts.triggers.evaluate()
        parts.triggers.redispatch()
        return [r.to_json() for r in results]
