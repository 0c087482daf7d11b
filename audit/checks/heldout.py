"""The held-out invariant over the registry: no version's train member is held out by its
own gate or by any ancestor's (``trainer.datasets.leaks``). The trainer refuses to train
such a run; this finds the versions registered before it did, or by anything else."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from audit.report import Findings
from trainer.datasets.leaks import lineage_leaks
from trainer.datasets.manifests import Manifests

NAME, TABLE = "held_out", "manifest_members"
AGAINST = "each version's train members against the held-out sets of its own and its ancestors' gates"


def check_held_out(findings: Findings, adapters: Sequence[Mapping[str, Any]],
                   manifests: Manifests) -> None:
    """``adapters``: the registry's rows as stored (adapter id, parent, manifest)."""
    parents = {a["adapter_id"]: a["parent_adapter_id"] for a in adapters}
    manifest_of = {a["adapter_id"]: a["manifest_id"] for a in adapters}
    sides = manifests.leak_sides(manifest_of.values())  # the same leaks, a fraction of the rows
    findings.checked += len(adapters)
    for leak in lineage_leaks(parents, manifest_of, sides):
        findings.add(f"adapter_versions adapter_id={leak.adapter}", leak.text())
