"""The typed gate record reads stored records and gives back exactly what it read: no
field added or dropped, NaN, None and unknown fields kept."""

from __future__ import annotations

import json
import math

from trainer.gate.verdict import GateRecord

STORED = {
    "promote": False, "reason": "rollout reward 0.2 is not more than 0.0 above the parent's 0.3",
    "metric": "rollout", "test": "bootstrap", "samples": 4, "seed": 0, "held_out": 4,
    "interval": {"mean": -0.1, "low": -0.3, "high": 0.1, "level": 0.95, "n": 4,
                 "resamples": 10000, "seed": 0},
    "comparison": {"rollout_reward": {"successor": 0.2, "parent": 0.3, "delta": -0.1},
                   "criteria": {"partial": {"successor": float("nan"), "parent": None}}},
    "rollouts": {"successor": {"mean_reward": 0.2, "n": 2, "cases": ["s1", "s2"],
                               "answers": ["a", "b"], "rewards": [0.1, 0.3], "memo": None},
                 "parent": {"mean_reward": 0.3, "n": 2, "cases": ["s1", "s2"], "answers": ["c", "d"],
                            "rewards": [0.2, 0.4], "reused_from": "the gate record of coding@1",
                            "memo": {"reused": 2, "generated": 0, "keys_sha256": "k" * 64}},
                 "harness": "tasks", "max_new_tokens": 160, "logged_mean_reward": 0.25},
    "non_inferiority": {"ok": True, "margin": 0.05, "precision": "bf16", "sets": {
        "general": {"ok": True, "note": "not compared: the two answered different cases"}}},
    "a_field_of_later_code": {"x": [1, 2]},
}


def test_a_stored_record_reads_typed_and_writes_back_unchanged() -> None:
    record = GateRecord.of(STORED)
    assert record is not None and not record.promote and record.rollouts is not None
    parent = record.rollouts.parent
    assert parent is not None and parent.memo == {"reused": 2, "generated": 0, "keys_sha256": "k" * 64}
    assert record.rollouts.precision == "auto"  # absent: the default, not written back
    assert record.non_inferiority is not None and record.non_inferiority.sets["general"].ok
    back = record.to_json()
    assert json.dumps(back, sort_keys=True, default=str) == json.dumps(STORED, sort_keys=True, default=str)
    assert math.isnan(back["comparison"]["criteria"]["partial"]["successor"])
    assert GateRecord.of(None) is None and GateRecord.of({}) is None
