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
                   manifests: Manifests, registry: Sequence[Mapping[str, Any]] | None = None) -> None:
    """``adapters``: the registry's rows as stored (adapter id, parent, manifest) of the
    versions to judge; ``registry``: every row, when those are only some of them (their
    ancestors' gates are read from it)."""
    every = {a["adapter_id"]: a for a in (registry if registry is not None else adapters)}
    judged = {a["adapter_id"] for a in adapters}
    lineage = set()
    for adapter in judged:
        current = adapter
        while current is not None and current in every and current not in lineage:
            lineage.add(current)
            current = every[current]["parent_adapter_id"]
    manifest_of = {a: every[a]["manifest_id"] for a in lineage}
    sides = manifests.leak_sides(manifest_of.values())  # the same leaks, a fraction of the rows
    findings.checked += len(judged)
    parents = {a: every[a]["parent_adapter_id"] for a in lineage}
    for leak in lineage_leaks(parents, manifest_of, sides):
        if leak.adapter in judged:
            findings.add(f"adapter_versions adapter_id={leak.adapter}", leak.text())
