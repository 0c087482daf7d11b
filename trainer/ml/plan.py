"""What a training run will do, step by step: the batches, the loss of one step, and the
validation loss its checkpoints are chosen by (``trainer.ml.lora`` runs it).

SFT (``objective = "sft"``): the reward-weighted NLL of ``trainer.ml.data``, plus, with
``kl_weight`` > 0, that weight times the mean per-token KL(policy || base) on the same
response tokens (``trainer.ml.anchor``). DPO: the preference loss of
``trainer.ml.preference`` (plus ``dpo_nll_weight`` times the chosen answers' NLL). With
``validation_fraction`` > 0 the examples of some prompts are kept out of the batches
(``trainer.ml.checkpoints``) and their loss is the validation loss: the weighted NLL for
SFT, the preference loss for DPO.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from trainer.ml.anchor import base_logits, token_kl
from trainer.ml.checkpoints import split_validation
from trainer.ml.data import (
    EncodedExamples,
    TrainingExample,
    encode_examples,
    preference_pairs,
    select_answers,
    select_weighted,
)
from trainer.ml.hyper import HyperParams
from trainer.ml.load import autocast_for, base_dtype
from trainer.ml.objective import (
    batch_schedule,
    response_logits,
    sliced_weighted_nll,
    weighted_token_nll,
)
from trainer.ml.preference import dpo_batches, dpo_step_loss

Loss = Callable[[Any, Any], torch.Tensor]  # (model, CPU-side batch) -> loss on the device


@dataclass(frozen=True)
class Plan:
    name: str
    batches: list[Any]  # one CPU-side batch per step
    loss: Loss
    tokens: int
    examples_used: int
    pairs_used: int = 0
    validate: Callable[[Any], float] | None = None  # model -> loss on the validation prompts
    validation_prompts: int = 0


def build_plan(model: Any, tokenizer: Any, examples: Sequence[TrainingExample],
               hyper: HyperParams, device: torch.device) -> Plan:
    """Raises:
        ValueError: nothing to train on (see ``trainer.ml.lora.train_successor``).
    """
    chosen = select_answers(examples, hyper.selection, hyper.keep_per_prompt, hyper.min_reward)
    fit, held = split_validation(chosen, hyper.validation_fraction, hyper.seed)
    prompts = len({ex.prompt_key() for ex in held})
    if hyper.objective == "dpo":
        return _dpo_plan(model, tokenizer, fit, held, hyper, device, prompts)
    dtype = base_dtype(device, hyper.precision)
    data = _weighted(tokenizer, fit, hyper)
    if data is None:
        raise ValueError(f"no example has reward >= min_reward ({hyper.min_reward})")
    steps = hyper.steps_for(len(data))
    sft = [data.select(i) for i in batch_schedule(len(data), hyper.batch_size, steps, hyper.seed)]
    check = _weighted(tokenizer, held, hyper)
    return Plan("reward_weighted_sft", sft, lambda m, b: sft_loss(m, b, device, dtype, hyper.kl_weight),
                sum(int(b.attention_mask.sum()) for b in sft), len(data),
                validate=None if check is None else
                lambda m: _mean_loss(m, check, hyper.batch_size, device, dtype),
                validation_prompts=prompts if check is not None else 0)


def _weighted(tokenizer: Any, examples: Sequence[TrainingExample],
              hyper: HyperParams) -> EncodedExamples | None:
    selected = select_weighted(examples, hyper.min_reward)
    if not selected:
        return None
    return encode_examples(tokenizer, [ex for ex, _ in selected], hyper.max_len,
                           [w for _, w in selected])


def sft_loss(model: Any, cpu_batch: EncodedExamples, device: torch.device, dtype: torch.dtype,
             kl_weight: float = 0.0) -> torch.Tensor:
    batch = cpu_batch.to(device)
    with autocast_for(device, dtype):
        if kl_weight <= 0:
            return sliced_weighted_nll(model, batch.input_ids, batch.attention_mask,
                                       batch.labels, batch.weights)
        found = response_logits(model, batch.input_ids, batch.attention_mask, batch.labels)
        reference = base_logits(model, batch)
        if found is None or reference is None:
            raise ValueError("kl_weight needs a model whose logits can be taken per position")
        return weighted_token_nll(*found, batch.weights) + kl_weight * token_kl(found[0], reference).mean()


def _mean_loss(model: Any, data: EncodedExamples, batch_size: int, device: torch.device,
               dtype: torch.dtype) -> float:
    """The weighted NLL over all of ``data`` (batch by batch, each weighted by its tokens)."""
    total = weight = 0.0
    with torch.no_grad():
        for start in range(0, len(data), batch_size):
            batch = data.select(torch.arange(start, min(start + batch_size, len(data))))
            tokens = float((batch.labels != -100).sum())
            total += float(sft_loss(model, batch, device, dtype)) * tokens
            weight += tokens
    return total / weight if weight else 0.0


def _dpo_plan(model: Any, tokenizer: Any, fit: Sequence[TrainingExample],
              held: Sequence[TrainingExample], hyper: HyperParams, device: torch.device,
              prompts: int) -> Plan:
    steps = hyper.steps_for(len(preference_pairs(fit, hyper.min_reward)))
    batches, pairs, used = dpo_batches(model, tokenizer, fit, hyper.min_reward, hyper.max_len,
                                       hyper.batch_size, steps, hyper.seed, device)
    validate = _dpo_validation(model, tokenizer, held, hyper, device)
    return Plan("dpo", batches,
                lambda m, b: dpo_step_loss(m, b, device, hyper.dpo_beta, hyper.dpo_nll_weight),
                sum(b.tokens for b in batches), used, pairs, validate,
                prompts if validate is not None else 0)


def _dpo_validation(model: Any, tokenizer: Any, held: Sequence[TrainingExample],
                    hyper: HyperParams, device: torch.device) -> Callable[[Any], float] | None:
    """The preference loss over every validation pair (reference log-probs taken now, from
    the model training starts from), or None when the validation prompts make no pair."""
    n = len(preference_pairs(held, hyper.min_reward))
    if n == 0:
        return None
    check, _, _ = dpo_batches(model, tokenizer, held, hyper.min_reward, hyper.max_len, n, 1,
                              hyper.seed, device)

    def validate(m: Any) -> float:
        with torch.no_grad():
            return float(dpo_step_loss(m, check[0], device, hyper.dpo_beta))

    return validate
