"""A training run's events, on stream ``training_run:<id>``. Pure.

Version 2 of each: the run's row takes its times from the event (version 1 writers
stamped the row from their own clock, a moment before), the queued run records its gate
and step count, and a success the training examples it selected (reward ids, in order).
Step and loss are progress, not history: only the run's row keeps them.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from events.server_events import ServerEvent


def _same(payload: dict[str, Any]) -> dict[str, Any]:
    return payload


class RunEvent(ServerEvent):
    """Every ``training.*`` event names its run."""

    run_id: str


class TrainingQueued(RunEvent):
    TYPE = "training.queued"
    VERSION = 2
    SUMMARY = "A training run was queued for a firing: parent, base model, manifest, settings"
    UPCASTERS = {1: lambda p: {**p, "gate": None, "total_steps": None}}

    parent_adapter_id: str | None
    base_model: str
    manifest_id: str
    firing_id: str
    hyper: dict[str, Any]
    reason: str
    gate: dict[str, Any] | None = Field(description="The gate's settings; None: written by version 1")
    total_steps: int | None = Field(description="None: written by version 1")
    policy_source: str | None = Field(None, description="Where the trigger policy came from: api, "
                                      "contract:<name>@<version>, none")
    policy_author: str | None = Field(None, description="Who set that policy")


class TrainingStarted(RunEvent):
    TYPE = "training.started"
    VERSION = 2
    SUMMARY = "A worker claimed the run (an attempt began)"
    UPCASTERS = {1: _same}

    attempt: int
    worker: str
    taken_over_from: str | None


class TrainingSucceeded(RunEvent):
    TYPE = "training.succeeded"
    VERSION = 2
    SUMMARY = "The run registered its successor; what the gate made of it and what it trained on"
    UPCASTERS = {1: lambda p: {"examples": None, "examples_sha256": None, **p}}

    attempt: int
    adapter_id: str
    status: str = Field(description="What the gate made of the successor")
    artifact_sha256: str
    gate_reason: str
    examples: list[str] | None = Field(
        description="The reward ids of the examples the run selected from its manifest, in training "
                    "order; None: written by version 1")
    examples_sha256: str | None = Field(description="sha256 of those examples' canonical lines")


class TrainingFailed(RunEvent):
    TYPE = "training.failed"
    VERSION = 2
    SUMMARY = "The run failed (or the trainer gave up on it)"
    UPCASTERS = {1: _same}

    attempt: int
    error: str | None


class TrainingRequeued(RunEvent):
    TYPE = "training.requeued"
    VERSION = 2
    SUMMARY = "A failed run was sent round again"
    UPCASTERS = {1: _same}

    reason: str
    previous_error: str | None
