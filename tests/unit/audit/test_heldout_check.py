"""`hcp audit all` names a version that trained on what a gate of its lineage held out."""

from __future__ import annotations

from audit.checks import heldout
from audit.report import Findings
from trainer.datasets.leaks import Sides


class Manifests:
    def __init__(self, sides: dict[str, Sides]) -> None:
        self.found = sides

    def sides(self, manifest_ids):
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
