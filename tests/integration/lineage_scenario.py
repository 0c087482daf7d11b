"""A small history for the lineage tests: two generations of ``coding``, an alias that moved.

coding@1 (root) trains on 12 rewards (manifest m1); production points at it. Five more
rewards arrive (one of tenant ``acme``), and coding@2 trains from coding@1 on those five
only (``dataset = "since_parent"``, manifest m2); production moves to coding@2. So an
event of the first twelve reaches coding@1 directly and coding@2 through its parent.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.policy import TriggerPolicy
from hcp.bootstrap import Container
from tests.unit.trainer_core.factories import seed_contract, seed_dataset, seed_reward
from tests.unit.trainer_core.fixtures import fake_model_dir, fake_train
from trainer.registry.model import AdapterVersion, AliasMove


@dataclass
class Scenario:
    contract_hash: str
    first: list[dict[str, Any]]  # the 12 seeded rewards (train 8, held out 4)
    later: list[dict[str, Any]]  # the 5 after the root (train 4, held out 1)
    root: AdapterVersion
    successor: AdapterVersion
    moves: list[AliasMove]


def build(parts: Container, tmp_path: Path) -> Scenario:
    digest = seed_contract(parts.engine)
    contract = ("default", 1, digest)
    first = seed_dataset(parts.engine, parts.store, "coding", contract=contract)
    parts.registry.register_base_model("tiny", fake_model_dir(tmp_path / "base"), "tester")
    parts.policies.configure("coding", TriggerPolicy(min_new_rewards=4, dataset="since_parent"),
                             "tester")
    root = fake_train(parts, parts.triggers.fire_manual("coding", "alice", "first version").run_id)
    moves = [parts.aliases.move("coding", "production", root.adapter_id, "alice", "launch")]
    later = [seed_reward(parts.engine, parts.store, "coding", f"later {i}", "Sure, here it is.",
                         0.9, "train" if i < 4 else "held_out", contract,
                         tenant="acme" if i == 0 else None) for i in range(5)]
    fired = {r.specialist: r for r in parts.triggers.evaluate()}["coding"].fired
    assert fired is not None and fired.parent_key == root.adapter_id
    successor = fake_train(parts, fired.run_id)
    moves.append(parts.aliases.move("coding", "production", successor.adapter_id, "bob", "better"))
    return Scenario(digest, first, later, root, successor, moves)
