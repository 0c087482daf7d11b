"""Preference optimisation (DPO) from pairs of responses to the same prompt.

For a pair (chosen ``c``, rejected ``r``, weight ``w``) from ``data.preference_pairs`` and
``s(y) = sum of response-token log-probs``, the loss is the ``w``-weighted mean of::

    -log sigmoid(beta * ((s_pi(c) - s_ref(c)) - (s_pi(r) - s_ref(r))))

With ``nll_weight`` > 0 the loss adds that weight times the mean per-token NLL of the
chosen responses (DPO + NLL, as iterative RPO trains: DPO alone can lower the likelihood
of the chosen answers while it widens the margin, which a small model pays for in what it
generates).

The reference policy is the adapter training starts from (the parent, or for a root the
bare base, since a fresh LoRA starts as the identity). Its log-probs are computed once,
before the first step, under ``no_grad`` in eval mode, so no second model is held; at the
first step policy == reference and the loss is exactly log 2.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from trainer.ml.data import (
    IGNORE_INDEX,
    EncodedExamples,
    TrainingExample,
    encode_examples,
    preference_pairs,
)
from trainer.ml.load import autocast_for
from trainer.ml.objective import batch_schedule, next_token_labels, response_token_nll


@dataclass(frozen=True)
class PairBatch:
    chosen: EncodedExamples
    rejected: EncodedExamples
    ref_chosen: torch.Tensor  # [B]
    ref_rejected: torch.Tensor  # [B]

    @property
    def tokens(self) -> int:
        return int(self.chosen.attention_mask.sum()) + int(self.rejected.attention_mask.sum())


def sequence_logps(model: Any, batch: EncodedExamples) -> torch.Tensor:
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    return -response_token_nll(logits, batch.labels).sum(dim=1)


def dpo_loss(
    policy_chosen: torch.Tensor, policy_rejected: torch.Tensor, ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor, weights: torch.Tensor, beta: float,
) -> torch.Tensor:
    logits = beta * ((policy_chosen - ref_chosen) - (policy_rejected - ref_rejected))
    return (weights * -F.logsigmoid(logits)).sum() / weights.sum().clamp_min(1e-12)


def _reference_logps(
    model: Any, data: EncodedExamples, device: torch.device, batch_size: int
) -> torch.Tensor:
    out = []
    model.eval()
    with torch.no_grad(), autocast_for(device, model.dtype):
        for start in range(0, len(data), batch_size):
            rows = torch.arange(start, min(start + batch_size, len(data)))
            out.append(sequence_logps(model, data.select(rows).to(device)).float().cpu())
    return torch.cat(out)


def dpo_batches(
    model: Any, tokenizer: Any, examples: Sequence[TrainingExample], min_reward: float,
    max_len: int, batch_size: int, steps: int, seed: int, device: torch.device,
) -> tuple[list[PairBatch], int, int]:
    """One batch of pairs per step, reference log-probs included; (batches, pairs, examples).

    Raises:
        ValueError: no prompt has two responses with different rewards.
    """
    pairs = preference_pairs(examples, min_reward)
    if not pairs:
        raise ValueError("no preference pair: no prompt has a response with reward >= "
                         f"min_reward ({min_reward}) and a lower-rewarded one")
    chosen = encode_examples(tokenizer, [c for c, _, _ in pairs], max_len, [w for *_, w in pairs])
    rejected = encode_examples(tokenizer, [r for _, r, _ in pairs], max_len)
    ref_chosen = _reference_logps(model, chosen, device, batch_size)
    ref_rejected = _reference_logps(model, rejected, device, batch_size)
    batches = [
        PairBatch(chosen.select(i), rejected.select(i), ref_chosen[i], ref_rejected[i])
        for i in batch_schedule(len(pairs), batch_size, steps, seed)
    ]
    used = len({ex for c, r, _ in pairs for ex in (c, r)})
    return batches, len(pairs), used


def dpo_step_loss(model: Any, batch: PairBatch, device: torch.device, beta: float,
                  nll_weight: float = 0.0) -> torch.Tensor:
    chosen, rejected = batch.chosen.to(device), batch.rejected.to(device)
    with autocast_for(device, model.dtype):
        policy_chosen = sequence_logps(model, chosen)
        policy_rejected = sequence_logps(model, rejected)
    loss = dpo_loss(policy_chosen, policy_rejected, batch.ref_chosen.to(device),
                    batch.ref_rejected.to(device), chosen.weights, beta)
    if nll_weight <= 0:
        return loss
    tokens = (next_token_labels(chosen.labels) != IGNORE_INDEX).sum().clamp_min(1)
    return loss + nll_weight * -policy_chosen.sum() / tokens
