"""Trigger firings as frozen values. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from kernel.values import JsonValue

FiringPolicy = Literal["count", "drift", "schedule", "manual", "forced"]


@dataclass(frozen=True)
class Firing(JsonValue):
    firing_id: str
    specialist: str
    parent_key: str
    dataset_cut: int
    policy: str
    reason: str
    run_id: str
    fired_by: str
    fired_at: datetime
    rerun: int = 0  # 0: the first run of this work key; n: the n-th forced re-run of it
    created: bool = True  # False when this work had already been fired before
