"""The hyper-parameters of a training run (pure: no torch), checked when they are set."""

from __future__ import annotations

import math
from dataclasses import dataclass

from trainer.ml.data import SELECTIONS

OBJECTIVES = ("sft", "dpo")
PRECISIONS = ("auto", "fp32", "bf16")


@dataclass(frozen=True)
class HyperParams:
    rank: int = 8
    alpha: int = 16
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    learning_rate: float = 1e-3
    steps: int = 20  # optimiser steps, unless ``epochs`` is set
    batch_size: int = 4
    seed: int = 0
    max_len: int = 256
    min_reward: float = 0.0
    weight_decay: float = 0.0
    objective: str = "sft"  # "sft": reward-weighted SFT; "dpo": preference pairs
    dpo_beta: float = 0.1
    # Which answers to the same prompt train (trainer.ml.data.select_answers): "all",
    # "best_of_k" (rejection sampling) or "best_worst" (one preference pair per prompt).
    selection: str = "all"
    keep_per_prompt: int = 1  # best_of_k: distinct answers kept per prompt
    epochs: float = 0.0  # > 0: steps = ceil(epochs x selected examples / batch_size)
    # The frozen base's weights: "auto" is bf16 on a GPU and fp32 on a CPU (bit-for-bit
    # reproducible); "bf16" on a CPU with AMX trains several times faster. LoRA weights and
    # the optimiser state stay fp32 either way.
    precision: str = "auto"

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES or self.dpo_beta <= 0:
            raise ValueError(f"objective must be one of {OBJECTIVES} and dpo_beta > 0")
        if self.rank < 1 or self.alpha <= 0 or self.batch_size < 1 or self.max_len < 2:
            raise ValueError("rank, alpha and batch_size must be positive and max_len >= 2")
        if self.steps < 0 or self.learning_rate <= 0 or not self.target_modules:
            raise ValueError("steps >= 0, learning_rate > 0 and target_modules are required")
        if self.selection not in SELECTIONS or self.keep_per_prompt < 1:
            raise ValueError(f"selection must be one of {SELECTIONS} and keep_per_prompt >= 1")
        if self.precision not in PRECISIONS or not 0 <= self.epochs <= 100:
            raise ValueError(f"precision must be one of {PRECISIONS} and epochs in [0, 100]")

    def steps_for(self, examples: int) -> int:
        """Optimiser steps for ``examples`` selected examples (or preference pairs)."""
        if self.epochs <= 0:
            return self.steps
        return max(1, math.ceil(self.epochs * examples / self.batch_size))
