"""The hyper-parameters of a training run (pure: no torch), checked when they are set."""

from __future__ import annotations

import math
from dataclasses import dataclass

from trainer.ml.data import SELECTIONS

OBJECTIVES = ("sft", "dpo")
PRECISIONS = ("auto", "fp32", "bf16")
INITS = ("parent", "base")


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
    dpo_nll_weight: float = 0.0  # dpo: plus this times the chosen answers' per-token NLL
    # Which answers to the same prompt train (trainer.ml.data.select_answers): "all",
    # "best_of_k" (rejection sampling) or "best_worst" (one preference pair per prompt).
    selection: str = "all"
    keep_per_prompt: int = 1  # best_of_k: distinct answers kept per prompt
    epochs: float = 0.0  # > 0: steps = ceil(epochs x selected examples / batch_size)
    # The frozen base's weights: "auto" is bf16 on a GPU and fp32 on a CPU (bit-for-bit
    # reproducible); "bf16" on a CPU with bf16 products (AVX-512, AMX) trains several times
    # faster, and on one without them runs fp32 (``load.base_dtype``: bf16 there is ~20x
    # slower). LoRA weights and the optimiser state stay fp32 either way.
    precision: str = "auto"
    # Where training starts: "parent" (the parent's adapter, fine-tuned further) or "base"
    # (a fresh seeded LoRA on the base, whatever the parent: with ``dataset = "all"`` that is
    # ReST-EM, each generation trained from the base on the union of the data so far).
    init: str = "parent"
    # > 0: the SFT loss adds this times the per-token KL(policy || base) on the response
    # tokens (the base: the adapter switched off), an anchor against drifting from what the
    # base could do; RL's Razor found that KL on the new task's prompts predicts forgetting.
    kl_weight: float = 0.0
    # > 0: this share of the train prompts is kept out of the gradient, and the adapter kept
    # is the one with the lowest loss on them among ``checkpoints`` evaluated along the run
    # (never the gate's held-out set).
    validation_fraction: float = 0.0
    checkpoints: int = 4
    # Chat traffic (trainer/datasets/traffic.py): a correction the user sent trains as a
    # better answer to the same prompt, rewarded ``correction_reward``, and a question
    # asked again is rendered as its first asking was. Read where the run's examples are
    # made from its manifest; nothing here uses them.
    traffic: bool = False
    correction_reward: float = 1.0

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES or self.dpo_beta <= 0 or self.dpo_nll_weight < 0:
            raise ValueError(f"objective must be one of {OBJECTIVES}, dpo_beta > 0 and "
                             "dpo_nll_weight >= 0")
        if self.rank < 1 or self.alpha <= 0 or self.batch_size < 1 or self.max_len < 2:
            raise ValueError("rank, alpha and batch_size must be positive and max_len >= 2")
        if self.steps < 0 or self.learning_rate <= 0 or not self.target_modules:
            raise ValueError("steps >= 0, learning_rate > 0 and target_modules are required")
        if self.selection not in SELECTIONS or self.keep_per_prompt < 1:
            raise ValueError(f"selection must be one of {SELECTIONS} and keep_per_prompt >= 1")
        if self.precision not in PRECISIONS or not 0 <= self.epochs <= 100:
            raise ValueError(f"precision must be one of {PRECISIONS} and epochs in [0, 100]")
        if self.init not in INITS or not 0 <= self.kl_weight <= 100:
            raise ValueError(f"init must be one of {INITS} and kl_weight in [0, 100]")
        if not 0 <= self.correction_reward <= 1:
            raise ValueError("correction_reward must be in [0, 1]")
        if not 0 <= self.validation_fraction <= 0.5 or not 1 <= self.checkpoints <= 50:
            raise ValueError("validation_fraction must be in [0, 0.5] and checkpoints in [1, 50]")

    def steps_for(self, examples: int) -> int:
        """Optimiser steps for ``examples`` selected examples (or preference pairs)."""
        if self.epochs <= 0:
            return self.steps
        return max(1, math.ceil(self.epochs * examples / self.batch_size))
