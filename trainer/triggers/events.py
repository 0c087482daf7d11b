"""The triggers' events: policies set and dropped through the API, and firings. Pure.

All on the specialist's stream; ``trigger.fired`` is THE record that a run was started
for a piece of work (specialist, parent, dataset cut, re-run), whoever fired it.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from events.server_events import ServerEvent


class TriggerConfigured(ServerEvent):
    TYPE = "trigger.configured"
    SUMMARY = "A specialist's trigger policy was set through the API"

    specialist: str
    policy: dict[str, Any] = Field(description="The policy document (contract.policy.TriggerPolicy)")


class TriggerCleared(ServerEvent):
    TYPE = "trigger.cleared"
    SUMMARY = "The API-set trigger policy was dropped (the contract's is in force again)"

    specialist: str
    reason: str


class TriggerFired(ServerEvent):
    TYPE = "trigger.fired"
    SUMMARY = "A trigger fired: one training run for (specialist, parent, dataset cut, re-run)"

    firing_id: str
    run_id: str
    policy: str = Field(description="count | drift | schedule | manual | forced")
    reason: str
    parent_adapter_id: str | None
    dataset_cut: int
    cut_from: int
    manifest_id: str
    manifest_hash: str
    rerun: int = 0
