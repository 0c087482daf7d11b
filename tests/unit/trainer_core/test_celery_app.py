import pytest

from trainer.runs.celery_app import EVALUATE_TASK, QUEUE, TRAIN_TASK, WorkerServices, make_celery
from trainer.runs.model import RunOutcome


def test_training_tasks_ack_late_and_come_back_when_their_worker_dies():
    services = WorkerServices(train=lambda run_id, worker, config: RunOutcome("done", run_id),
                              evaluate_triggers=list)
    app = make_celery("redis://127.0.0.1:6379/9", services=lambda: services, visibility_timeout=8,
                      beat_seconds=30)
    task = app.tasks[TRAIN_TASK]
    assert task.acks_late and task.reject_on_worker_lost
    assert app.conf.worker_prefetch_multiplier == 1 and app.conf.task_default_queue == QUEUE
    options = app.conf.broker_transport_options
    assert options["visibility_timeout"] == 8 and options["unacked_restore_throttle"] == 1
    assert app.conf.beat_schedule["evaluate-triggers"]["task"] == EVALUATE_TASK
    assert EVALUATE_TASK in app.tasks
    assert task.run("run-1") == "done"  # the task hands the run to the worker's services


def test_a_sending_process_registers_no_tasks_and_no_broker_means_no_app():
    assert TRAIN_TASK not in make_celery("redis://127.0.0.1:6379/9").tasks
    with pytest.raises(ValueError):
        make_celery("")
