from hcp.settings import Settings
from trainer.celery_app import EVALUATE_TASK, QUEUE, TRAIN_TASK, make_celery


def test_training_tasks_ack_late_and_come_back_when_their_worker_dies():
    app = make_celery(Settings(redis_url="redis://127.0.0.1:6379/9"), visibility_timeout=8,
                      beat_seconds=30)
    task = app.tasks[TRAIN_TASK]
    assert task.acks_late and task.reject_on_worker_lost
    assert app.conf.worker_prefetch_multiplier == 1 and app.conf.task_default_queue == QUEUE
    options = app.conf.broker_transport_options
    assert options["visibility_timeout"] == 8 and options["unacked_restore_throttle"] == 1
    assert app.conf.beat_schedule["evaluate-triggers"]["task"] == EVALUATE_TASK
    assert EVALUATE_TASK in app.tasks


def test_no_broker_means_no_celery_app():
    import pytest

    with pytest.raises(ValueError):
        make_celery(Settings(redis_url=""))
