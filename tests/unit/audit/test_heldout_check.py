"""`hcp audit all` names a version that trained on what a gate of its lineage held out."""

from __future__ import annotations

import uuid

from sqlalchemy import create_engine

from audit.checks import heldout
from audit.report import Findings
from kernel.db import metadata
from migrations.schema import load_all_tables
from trainer.datasets.leaks import Sides, lineage_leaks
from trainer.datasets.members import ManifestIndex
from trainer.datasets.tables import dataset_manifests, manifest_members


class Manifests:
    def __init__(self, sides: dict[str, Sides]) -> None:
        self.found = sides

    def leak_sides(self, manifest_ids):
        return {m: self.found[m] for m in manifest_ids}


def test_a_child_trained_on_its_parents_held_out_subject_is_named():
    rows = [{"adapter_id": "coding@1", "parent_adapter_id": None, "manifest_id": "m1"},
            {"adapter_id": "coding@2", "parent_adapter_id": "coding@1", "manifest_id": "m2"}]
    manifests = Manifests({"m1": Sides(frozenset({"a"}), frozenset({"episode:s-8:8"})),
                           "m2": Sides(frozenset({"b", "episode:s-8:8"}), frozenset({"c"}))})
    findings = Findings(heldout.NAME, heldout.TABLE, heldout.AGAINST)
    heldout.check_held_out(findings, rows, manifests)  # type: ignore[arg-type]
    assert findings.checked == 2
    assert [(m.subject, m.message) for m in findings.mismatches] == [
        ("adapter_versions adapter_id=coding@2",
         "coding@2 trained on 1 subject(s) held out by the gate of coding@1 (e.g. episode:s-8:8)")]
    honest = Findings(heldout.NAME, heldout.TABLE, heldout.AGAINST)
    heldout.check_held_out(honest, rows[:1], manifests)  # type: ignore[arg-type]
    assert honest.ok


def test_the_sides_a_leak_can_be_made_of_give_the_same_leaks_from_fewer_rows():
    engine = create_engine("sqlite://")
    load_all_tables()
    metadata.create_all(engine, tables=[metadata.tables["specialists"], dataset_manifests, manifest_members])
    members = {"m1": [("a", "train"), ("x", "held_out"), ("y", "held_out")],
               "m2": [("x", "train"), ("y", "held_out"), ("z", "held_out")]}
    with engine.begin() as conn:
        for manifest_id, rows in members.items():
            for position, (subject, split) in enumerate(rows):
                conn.execute(manifest_members.insert().values(
                    manifest_id=manifest_id, reward_position=position, reward_id=uuid.uuid4(),
                    subject_id=subject, stream_id="s", split=split))
    index = ManifestIndex(engine)
    whole, cut = index.sides(["m1", "m2"]), index.leak_sides(["m1", "m2"])
    assert cut == {"m1": Sides(frozenset({"a"}), frozenset({"x"})),  # y, z: no manifest trains on them
                   "m2": Sides(frozenset({"x"}), frozenset())}
    parents, manifest_of = {"c@1": None, "c@2": "c@1"}, {"c@1": "m1", "c@2": "m2"}
    assert lineage_leaks(parents, manifest_of, cut) == lineage_leaks(parents, manifest_of, whole) != []
