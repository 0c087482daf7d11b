"""The held-out invariant, the sides a manifest keeps, and which contract it draws from."""

from __future__ import annotations

import pytest

from kernel.errors import Invalid
from tests.unit.trainer_core.test_manifest import reward
from trainer.datasets.leaks import Reserved, Sides, keep_sides, lineage_leaks
from trainer.triggers.dataset_contract import ContractChoice, dataset_contract

S = frozenset


def test_a_train_member_held_out_by_an_ancestors_gate_is_a_leak():
    parents = {"c@1": None, "c@2": "c@1", "c@3": "c@2", "c@4": "c@1"}
    manifests = {"c@1": "m1", "c@2": "m2", "c@3": "m3", "c@4": "m4"}
    sides = {"m1": Sides(S({"a", "b"}), S({"g1", "g2"})), "m2": Sides(S({"c"}), S({"g3"})),
             "m3": Sides(S({"d", "g1", "g3"}), S({"g4"})), "m4": Sides(S({"e", "g4"}), S({"g5"}))}
    leaks = lineage_leaks(parents, manifests, sides)
    assert [(lk.adapter, lk.held_by, lk.count) for lk in leaks] == [("c@3", "c@2", 1),
                                                                    ("c@3", "c@1", 1)]
    assert leaks[1].text() == "c@3 trained on 1 subject(s) held out by the gate of c@1 (e.g. g1)"
    # a sibling's gate is not an ancestor's: c@4 may train on what c@3's gate held out
    own = lineage_leaks({"x@1": None}, {"x@1": "m"}, {"m": Sides(S({"s"}), S({"s"}))})
    assert own[0].text().startswith("x@1 trained on 1 subject(s) held out by its own gate")


def test_a_manifest_keeps_each_reward_on_its_subjects_first_side():
    rows = [reward(1, "old", ("e1",), split="held_out"), reward(2, "old", ("e1",), split="train"),
            reward(3, "new", ("e2",)), reward(4, "gated", ("e3",)), reward(5, "seen", ("e4",),
                                                                           split="held_out")]
    first = {"old": "held_out", "new": "train", "gated": "train", "seen": "held_out"}
    reserved = Reserved(held_out=S({"gated"}), trained=S({"seen"}))
    kept = keep_sides(rows, first, reserved)
    # rule 1's later reward on the other side is left out; so are what the lineage used
    assert [r.reward_id for r in kept] == ["r1", "r3"]
    assert Reserved.of([Sides(S({"a"}), S({"b"})), Sides(S({"c"}), S())]) == \
        Reserved(held_out=S({"b"}), trained=S({"a", "c"}))


def choice(**kw):
    base = {"specialist": "coding", "named": None, "parent_contracts": [], "serving_contract": None,
            "serving": [], "rewarded": []}
    return ContractChoice(**{**base, **kw})


def test_a_manifest_draws_from_one_contract():
    assert dataset_contract(choice(named="x", parent_contracts=["y"])) == "x"
    assert dataset_contract(choice(parent_contracts=["h", "h"], serving=["d", "h"])) == "h"
    assert dataset_contract(choice(serving_contract="d", serving=["d", "h"])) == "d"
    assert dataset_contract(choice(serving_contract="d", serving=["h"], rewarded=["d", "h"])) == "h"
    assert dataset_contract(choice(rewarded=["only"])) == "only"
    assert dataset_contract(choice()) is None
    with pytest.raises(Invalid, match=r"several contracts \(d, h\).*`contract`"):
        dataset_contract(choice(parent_contracts=["d", "h"], rewarded=["d", "h"]))
