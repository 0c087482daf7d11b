"""The trainer's Celery app and its two tasks, built by a factory (never at import time).

Redis is the broker. Training tasks acknowledge late (the message stays in Redis until
the task returns) and are rejected back to the queue when their worker process dies, so
a run is never lost with its worker; redelivery is safe because the handler claims the
run first (see ``trainer.runs.store``). With the Redis transport, a message whose worker
died outright (the whole machine, not one pool process) comes back after the
``visibility_timeout``: it must exceed the longest run, or a live run's message would be
handed to a second worker (which would find the run's lease held and back off).

The tasks do no wiring of their own: the composition root passes ``services``, a factory
the worker process calls on its first task (after a prefork fork: an engine must not be
shared across processes) to get the two handlers the tasks call.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from celery import Celery, Task

from trainer.runs.dispatch import EVALUATE_TASK, REDISPATCH_TASK, TRAIN_TASK
from trainer.runs.model import RunOutcome
from trainer.runs.runner import RunnerConfig

log = logging.getLogger(__name__)

QUEUE = "hcp.training"
VISIBILITY_TIMEOUT = 6 * 3600.0
LEASE_SECONDS = 60.0
MAX_ATTEMPTS = 3
REDISPATCH_SECONDS = 30.0


@dataclass(frozen=True)
class WorkerServices:
    """What the tasks of one worker process call."""

    train: Callable[[str, str, RunnerConfig], RunOutcome]  # (run id, worker, config)
    evaluate_triggers: Callable[[], list[dict[str, Any]]]  # fire what is due, re-send lost runs
    redispatch: Callable[[], list[str]] | None = None  # re-send queued / dead-lease runs


ServicesFactory = Callable[[], WorkerServices]


def make_celery(
    redis_url: str, *, services: ServicesFactory | None = None,
    visibility_timeout: float = VISIBILITY_TIMEOUT, lease_seconds: float = LEASE_SECONDS,
    max_attempts: int = MAX_ATTEMPTS, beat_seconds: float | None = None,
    redispatch_seconds: float | None = None,
) -> Celery:
    """The Celery app on ``redis_url``; with ``services``, the trainer's tasks registered
    (a process that only sends tasks needs none).

    ``beat_seconds`` adds a Celery beat entry that evaluates every trigger policy (and
    re-sends runs no worker holds) that often; ``redispatch_seconds`` one that only
    re-sends: runs queued while the broker was down, and runs whose worker died (lease
    expired). Run the worker with ``-B`` (``hcp trainer`` does by default) or a beat.
    """
    if not redis_url:
        raise ValueError("HCP_REDIS_URL is empty: training runs in-process (embedded mode)")
    app = Celery("hcp", broker=redis_url, set_as_current=False)
    app.conf.update(
        task_default_queue=QUEUE,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_ignore_result=True,  # status lives in training_runs, not in a result backend
        worker_prefetch_multiplier=1,  # a long task must not sit reserved behind another
        broker_transport_options={
            "visibility_timeout": visibility_timeout,
            # How often a worker sweeps for messages whose worker vanished; with the
            # defaults (10 s x every 10th poll) a short timeout would be honoured late.
            "unacked_restore_interval": max(1, min(10, int(visibility_timeout // 4))),
            "unacked_restore_throttle": 1 if visibility_timeout < 600 else 10,
        },
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )
    schedule: dict[str, Any] = {}
    if beat_seconds:
        schedule["evaluate-triggers"] = {"task": EVALUATE_TASK, "schedule": beat_seconds}
    if redispatch_seconds:
        schedule["redispatch"] = {"task": REDISPATCH_TASK, "schedule": redispatch_seconds}
    if schedule:
        # In memory: a beat embedded in each worker needs no schedule file, and a missed
        # tick is harmless (the next one re-sends whatever is still waiting).
        app.conf.update(beat_schedule=schedule, beat_scheduler="celery.beat:Scheduler")
    if services is not None:
        _register_tasks(app, services, RunnerConfig(lease_seconds=lease_seconds,
                                                    max_attempts=max_attempts))
    return app


def _register_tasks(app: Celery, services: ServicesFactory, config: RunnerConfig) -> None:
    built: dict[str, Any] = {}  # this worker process's services, made on its first task

    def local() -> WorkerServices:
        if built.get("pid") != os.getpid():
            built.update(pid=os.getpid(), services=services(),
                         worker=f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}")
        services_of_this_process: WorkerServices = built["services"]
        return services_of_this_process

    # shared=False: a task of this app only, never registered in other apps of the process.
    @app.task(name=TRAIN_TASK, bind=True, acks_late=True, reject_on_worker_lost=True,
              max_retries=None, shared=False)
    def train(self: Task, run_id: str) -> str:
        outcome = local().train(run_id, built["worker"], config)
        log.info("run %s: %s %s", run_id, outcome.outcome, outcome.adapter_id or outcome.error or "")
        if outcome.outcome == "busy":
            # Another live worker holds the run (a duplicate delivery): look again once its
            # lease would have expired, in case that worker dies before finishing.
            raise self.retry(countdown=max(1.0, outcome.retry_in + 1.0))
        return outcome.outcome

    @app.task(name=EVALUATE_TASK, shared=False)
    def evaluate_triggers() -> list[dict[str, Any]]:
        return local().evaluate_triggers()

    @app.task(name=REDISPATCH_TASK, shared=False)
    def redispatch() -> list[str]:
        handler = local().redispatch
        sent = handler() if handler is not None else []
        if sent:
            log.info("re-sent %d run(s) no worker held: %s", len(sent), ", ".join(sent))
        return sent
