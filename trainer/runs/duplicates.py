"""A successor whose weights are an existing version's is not registered again. Pure.

The same parent trained on the same examples with the same hyper-parameters gives the
same weights (training is seeded and, on one machine, deterministic): a forced re-run
under another gate, or a second firing of work already done, would register one set of
weights as two versions, one perhaps rejected and the other promoted. The run ends
instead, naming the version it duplicates and what the two runs had in common.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kernel.errors import Conflict


class DuplicateArtifact(Conflict):
    """The trained weights are byte-identical to a registered version's."""


@dataclass(frozen=True)
class TrainedFrom:
    """What decides a successor's weights: its parent, its examples, its hyper-parameters."""

    parent_adapter_id: str | None
    examples_sha256: str | None  # the manifest's examples (what the run selected from)
    hyper: Mapping[str, Any]


def duplicate_reason(artifact_sha256: str, version: str, ours: TrainedFrom,
                     theirs: TrainedFrom) -> str:
    """Why ``ours`` produced the weights of ``version`` (which ``theirs`` produced)."""
    if ours.parent_adapter_id == version:
        return (f"the trained weights are byte-identical to its parent {version} (artifact "
                f"{artifact_sha256[:12]}…): training did not change them (no step, or no "
                "example selected); not registered again")
    same = []
    same.append("the same parent" if ours.parent_adapter_id == theirs.parent_adapter_id
                else f"another parent ({ours.parent_adapter_id or 'a fresh root'} vs "
                     f"{theirs.parent_adapter_id or 'a fresh root'})")
    same.append("the same training examples" if ours.examples_sha256 == theirs.examples_sha256
                else "other training examples")
    changed = sorted(k for k in set(ours.hyper) | set(theirs.hyper)
                     if ours.hyper.get(k) != theirs.hyper.get(k))
    same.append("the same hyper-parameters" if not changed
                else f"hyper-parameters differing only in {', '.join(changed)}")
    why = ("so training reproduced its weights (a re-run of the same work: only the gate "
           "or the reason differed)" if not changed and "another" not in same[0]
           and same[1] == "the same training examples"
           else "and training still reached the same weights (e.g. no example was selected "
                "or no step changed them)")
    return (f"the trained weights are byte-identical to {version} (artifact "
            f"{artifact_sha256[:12]}…): {', '.join(same)}, {why}; not registered again")
