"""``training_runs`` as the projection of each run's ``training.*`` events.

The run's status machine (queued -> running -> succeeded | failed, and a failed run
requeued) is this one function, used by the write path and by the audit alike. Step,
loss, the lease's expiry and the last update are progress a worker heartbeats every few
seconds: working columns, set with ``set_working_in``, never history.
"""

from __future__ import annotations

from typing import Any

from events.projections.model import (
    NO_GUARD,
    Change,
    Insert,
    Near,
    Projection,
    ProjectionSet,
    State,
    Unrecorded,
    Update,
)
from events.server_events import Logged
from trainer.runs.events import (
    TrainingFailed,
    TrainingQueued,
    TrainingRequeued,
    TrainingStarted,
    TrainingSucceeded,
)
from trainer.runs.model import FAILED, QUEUED, RUNNING, SUCCEEDED
from trainer.runs.tables import training_runs

LEGACY_SECONDS = 60.0


def _time(done: Logged[Any]) -> Any:
    if done.stored_version >= 2:
        return done.recorded_at
    return Near(done.recorded_at, LEGACY_SECONDS, f"{done.type} v1 stamped the run from the worker's clock")


def _queued(done: Logged[Any], e: TrainingQueued) -> Change:
    v1 = "training.queued v1 did not record it"
    at = _time(done)
    return Insert("training_runs", {
        "run_id": e.run_id, "specialist": done.metadata.specialist,
        "parent_adapter_id": e.parent_adapter_id, "base_model": e.base_model,
        "manifest_id": e.manifest_id, "firing_id": e.firing_id, "hyper": e.hyper,
        "gate": e.gate if e.gate is not None else Unrecorded(v1), "status": QUEUED, "step": 0,
        "total_steps": e.total_steps if e.total_steps is not None else Unrecorded(v1),
        "last_loss": None, "error": None, "attempts": 0, "lease_owner": None, "lease_until": None,
        "adapter_id": None, "gate_outcome": None, "created_by": done.actor, "created_at": at,
        "updated_at": at, "started_at": None, "finished_at": None})


def _training_runs(done: Logged[Any], state: State) -> list[Change]:
    e, key = done.event, (done.event.run_id,)
    if isinstance(e, TrainingQueued):
        return [_queued(done, e)]
    if isinstance(e, TrainingStarted):
        values: dict[str, Any] = {"status": RUNNING, "attempts": e.attempt, "lease_owner": e.worker,
                                  "error": None, "started_at": _time(done)}
    elif isinstance(e, TrainingSucceeded):
        values = {"status": SUCCEEDED, "error": None, "adapter_id": e.adapter_id,
                  "gate_outcome": e.status, "finished_at": _time(done)}
    elif isinstance(e, TrainingFailed):
        values = {"status": FAILED, "error": e.error, "adapter_id": None, "gate_outcome": None,
                  "finished_at": _time(done)}
    else:
        assert isinstance(e, TrainingRequeued)
        values = {"status": QUEUED, "attempts": 0, "error": None, "lease_owner": None,
                  "finished_at": None}
    return [Update("training_runs", key, values)]


TRAINING_RUNS = Projection(
    training_runs, (TrainingQueued, TrainingStarted, TrainingSucceeded, TrainingFailed, TrainingRequeued),
    _training_runs, guard=NO_GUARD, working={
        "step": "progress a worker heartbeats", "last_loss": "progress a worker heartbeats",
        # with ``epochs`` the step count follows from the examples selected, so the worker
        # sets it once it has planned the run (the queued event records 0 for it)
        "total_steps": "the step count of the worker's plan",
        "lease_until": "the lease a live worker keeps renewing", "updated_at": "the last heartbeat"})
RUN_PROJECTIONS = ProjectionSet(TRAINING_RUNS)
