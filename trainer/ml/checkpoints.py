"""Checkpoint selection on a validation split of the train prompts.

A share of the train prompts (``validation_fraction``, chosen by a seeded hash of the
prompt, so the same examples give the same split everywhere) is kept out of the gradient.
The run evaluates its loss on them at ``checkpoints`` evenly spaced steps and keeps the
adapter weights of the best one: training past the point where the answers to prompts it
did not fit stop improving is what a successor would otherwise carry to the gate. The
gate's held-out set never takes part: it judges the result.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from trainer.ml.data import TrainingExample


def split_validation(examples: Sequence[TrainingExample], fraction: float,
                     seed: int) -> tuple[list[TrainingExample], list[TrainingExample]]:
    """(fit, validation): whole prompts go to one side; none validate when ``fraction`` is 0
    or there are fewer than two prompts."""
    prompts = sorted({ex.prompt_key() for ex in examples})
    if fraction <= 0 or len(prompts) < 2:
        return list(examples), []
    count = min(len(prompts) - 1, max(1, math.floor(fraction * len(prompts) + 0.5)))

    def rank(key: Any) -> str:
        return hashlib.sha256(f"{seed}\x00{key!r}".encode()).hexdigest()

    held = set(sorted(prompts, key=rank)[:count])
    return ([ex for ex in examples if ex.prompt_key() not in held],
            [ex for ex in examples if ex.prompt_key() in held])


def checkpoint_steps(total: int, checkpoints: int) -> list[int]:
    """``checkpoints`` steps spread evenly over ``1..total``, the last one included."""
    return sorted({max(1, round(total * i / checkpoints)) for i in range(1, checkpoints + 1)})


@dataclass
class Checkpoints:
    """The best adapter weights seen at the evaluated steps (a copy of the trainable ones)."""

    validate: Callable[[Any], float]  # model -> validation loss (eval mode, no grad)
    steps: list[int]
    losses: list[float] = field(default_factory=list)
    best_step: int = 0
    best_loss: float = math.inf
    _best: dict[str, torch.Tensor] = field(default_factory=dict, repr=False)

    def at(self, model: Any, step: int) -> None:
        if step not in self.steps:
            return
        model.eval()
        loss = self.validate(model)
        model.train()
        self.losses.append(loss)
        if loss < self.best_loss:
            self.best_step, self.best_loss = step, loss
            self._best = {n: p.detach().clone() for n, p in model.named_parameters()
                          if p.requires_grad}

    def restore(self, model: Any) -> None:
        """Put the best weights back (they are the last ones when the last step was best)."""
        with torch.no_grad():
            for name, param in model.named_parameters():
                if name in self._best:
                    param.copy_(self._best[name])

    def summary(self, validation_prompts: int) -> dict[str, Any]:
        return {"validation_prompts": validation_prompts, "steps": self.steps,
                "validation_loss": self.losses, "kept_step": self.best_step}
