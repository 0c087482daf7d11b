"""The triggers' tables as projections: a policy row per ``trigger.configured`` or
``trigger.cleared`` (JSON null: the contract's policy is in force again), a firing row
per ``trigger.fired`` (its work key is the exactly-once guarantee)."""

from __future__ import annotations

from typing import Any

from events.projections.model import Change, Insert, Projection, ProjectionSet, State
from events.server_events import Logged
from trainer.triggers.events import TriggerCleared, TriggerConfigured, TriggerFired
from trainer.triggers.policy import ROOT
from trainer.triggers.tables import trigger_firings, trigger_policies


def _policies(done: Logged[Any], state: State) -> list[Change]:
    e = done.event
    assert isinstance(e, TriggerConfigured | TriggerCleared)
    config = e.policy if isinstance(e, TriggerConfigured) else None
    return [Insert("trigger_policies", {"position": done.position, "specialist": e.specialist,
                                        "config": config, "actor": done.actor,
                                        "configured_at": done.recorded_at})]


def _firings(done: Logged[Any], state: State) -> list[Change]:
    e = done.event
    assert isinstance(e, TriggerFired)
    return [Insert("trigger_firings", {
        "firing_id": e.firing_id, "specialist": done.metadata.specialist,
        "parent_key": e.parent_adapter_id or ROOT, "dataset_cut": e.dataset_cut, "policy": e.policy,
        "reason": e.reason, "run_id": e.run_id, "fired_by": done.actor, "fired_at": done.recorded_at,
        "event_position": done.position, "rerun": e.rerun})]


TRIGGER_POLICIES = Projection(trigger_policies, (TriggerConfigured, TriggerCleared), _policies)
TRIGGER_FIRINGS = Projection(trigger_firings, (TriggerFired,), _firings)
TRIGGER_PROJECTIONS = ProjectionSet(TRIGGER_POLICIES, TRIGGER_FIRINGS)
