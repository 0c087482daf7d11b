"""Which of its manifest's examples a run trains on, by reward id: what ``training.succeeded``
records and the audit derives again.

The manifest holds every rewarded subject; the run's ``selection``, ``min_reward`` and
objective pick the ones that train (``trainer.ml.data.selected_examples``, pure). The
record is the reward ids in training order and the examples' digest, so an auditor with
the manifest (rebuilt from the log and the reward chain) can name exactly which answers
shaped the weights, and check the digest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainer.datasets.manifest import TRAIN, Manifest
from trainer.datasets.traffic import training_examples
from trainer.ml.data import examples_sha256, selected_examples
from trainer.ml.hyper import HyperParams


@dataclass(frozen=True)
class Selection:
    reward_ids: list[str]  # in training (canonical) order
    examples_sha256: str

    def summary(self) -> dict[str, Any]:
        return {"examples": list(self.reward_ids), "examples_sha256": self.examples_sha256}


def selection_of(manifest: Manifest, hyper: Mapping[str, Any]) -> Selection:
    """The train-split examples ``hyper`` selects from ``manifest``."""
    pairs = training_examples(manifest.split_examples(TRAIN), hyper)
    reward_of = {id(example): reward_id for reward_id, example in pairs}
    chosen = selected_examples(
        [example for _, example in pairs], str(hyper.get("selection", HyperParams.selection)),
        int(hyper.get("keep_per_prompt", HyperParams.keep_per_prompt)),
        float(hyper.get("min_reward", HyperParams.min_reward)),
        str(hyper.get("objective", HyperParams.objective)))
    return Selection([reward_of[id(ex)] for ex in chosen], examples_sha256(chosen))
