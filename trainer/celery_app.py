"""The Celery app of the trainer, built by a factory from settings (never at import time).

Redis is the broker. Training tasks acknowledge late (the message stays in Redis until
the task returns) and are rejected back to the queue when their worker process dies, so
a run is never lost with its worker; redelivery is safe because the handler claims the
run first (see ``trainer.runs``). With the Redis transport, a message whose worker died
outright (the whole machine, not one pool process) comes back after the
``visibility_timeout``: it must exceed the longest run, or a live run's message would be
handed to a second worker (which would find the run's lease held and back off).
"""

from __future__ import annotations

from celery import Celery

from hcp.settings import Settings

TRAIN_TASK = "hcp.train"
EVALUATE_TASK = "hcp.evaluate_triggers"
QUEUE = "hcp.training"
VISIBILITY_TIMEOUT = 6 * 3600.0
LEASE_SECONDS = 60.0
MAX_ATTEMPTS = 3


def make_celery(
    settings: Settings, *, visibility_timeout: float = VISIBILITY_TIMEOUT,
    lease_seconds: float = LEASE_SECONDS, max_attempts: int = MAX_ATTEMPTS,
    beat_seconds: float | None = None,
) -> Celery:
    """The Celery app on ``settings.redis_url``, with the trainer's tasks registered.

    ``beat_seconds`` adds a Celery beat entry that evaluates every trigger policy (and
    re-sends runs no worker holds) that often; run the worker with ``-B`` or a beat.
    """
    if not settings.redis_url:
        raise ValueError("HCP_REDIS_URL is empty: training runs in-process (embedded mode)")
    app = Celery("hcp", broker=settings.redis_url, set_as_current=False)
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
        hcp_settings=settings,
        hcp_lease_seconds=lease_seconds,
        hcp_max_attempts=max_attempts,
    )
    if beat_seconds:
        app.conf.beat_schedule = {
            "evaluate-triggers": {"task": EVALUATE_TASK, "schedule": beat_seconds},
        }
    from trainer.tasks import register_tasks

    register_tasks(app)
    return app
