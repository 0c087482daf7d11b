"""The examples a run trains on, from its manifest: as recorded, or read as chat traffic.

A manifest holds one example per rewarded subject (``trainer.datasets.manifest``). For
the task harness that is everything: k sampled answers per task, each rewarded, and the
run's ``selection`` picks among them. Chat traffic teaches in two more ways, which a
contract asks for with ``hyper.traffic = true``:

- **A correction is a better answer.** An answer the user corrected (``POST /v1/feedback``
  ``correction``) gives a second example for the same prompt: the correction, rewarded
  ``hyper.correction_reward`` (1.0). Rejection sampling trains on it like a high-reward
  answer; the preference objective (``objective = "dpo"``) pairs it, chosen, against the
  answer it replaced, whose reward the contract made lower (the user disputed it).
- **A question asked again is one prompt.** A client's "regenerate" sends the same
  question again in the session. The gateway records what the model was given (its
  ``context``) on every user turn; traffic recorded before it did so has it on a session's
  first question only, where the later asking would train on a bare transcript and never
  meet its first asking. Answers to one prompt text without recorded messages are given
  the messages of the first of them that recorded its context, so the preference
  objective compares a regenerated answer with the one it replaced (and any two answers
  the judge rated apart) on the very prompt the model saw.

Pure and deterministic: the audit derives a run's examples again with the same function
(``trainer.runs.selection``). Without ``hyper.traffic`` the manifest's examples are taken
as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from trainer.datasets.manifest import ManifestExample
from trainer.ml.data import Message, TrainingExample, canonical_order

CORRECTION = "#correction"  # suffix of the subject id of an example made from a correction


def training_examples(examples: Sequence[ManifestExample],
                      hyper: Mapping[str, Any]) -> list[tuple[str, TrainingExample]]:
    """(reward id, example) for each example the run may train on, in manifest order."""
    made = [(ex.reward_id, ex.training_example()) for ex in examples]
    if not hyper.get("traffic"):
        return made
    reward = float(hyper.get("correction_reward", 1.0))
    corrections = [(ex.reward_id, _corrected(ex, reward)) for ex in examples if ex.correction]
    return _aligned(made + corrections)


def _corrected(example: ManifestExample, reward: float) -> TrainingExample:
    return TrainingExample(prompt=example.prompt, response=str(example.correction), reward=reward,
                           weight=1.0, subject_id=example.subject_id + CORRECTION,
                           messages=example.messages)


def _aligned(made: list[tuple[str, TrainingExample]]) -> list[tuple[str, TrainingExample]]:
    """Examples of one prompt text rendered alike: those without recorded messages take the
    messages of the first (in canonical order) that has them."""
    served: dict[str, tuple[Message, ...]] = {}
    for ex in canonical_order(ex for _, ex in made):
        if ex.messages is not None:
            served.setdefault(ex.prompt, ex.messages)
    return [(reward_id, ex if ex.messages is not None or ex.prompt not in served
             else replace(ex, messages=served[ex.prompt])) for reward_id, ex in made]
