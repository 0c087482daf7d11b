"""The reward-weighted SFT loss and the deterministic batch schedule (see ``data``)."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from trainer.ml.data import IGNORE_INDEX


def next_token_labels(labels: torch.Tensor) -> torch.Tensor:
    """Labels shifted so position t holds the token that logits[t] predicts, ``[B, L]``."""
    # Shifting the labels (not the logits) avoids copying the [B, L, vocab] logits.
    return F.pad(labels[:, 1:], (0, 1), value=IGNORE_INDEX)


def response_token_nll(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per-position next-token NLL, ``[B, L]``; 0 where the shifted label is ignored."""
    targets = next_token_labels(labels)
    nll = F.cross_entropy(
        logits.float().view(-1, logits.shape[-1]),
        targets.reshape(-1),
        ignore_index=IGNORE_INDEX,
        reduction="none",
    )
    return nll.view(targets.shape)


def weighted_nll(
    logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor
) -> torch.Tensor:
    """``sum_i a_i * sum_t nll_it / sum_i a_i * n_i`` over response tokens of the batch."""
    nll = response_token_nll(logits, labels)
    is_response = next_token_labels(labels) != IGNORE_INDEX
    token_weights = is_response.to(nll.dtype) * weights[:, None].to(nll.dtype)
    return (nll * token_weights).sum() / token_weights.sum().clamp_min(1e-12)


def batch_schedule(n: int, batch_size: int, steps: int, seed: int) -> list[torch.Tensor]:
    """Index batches for ``steps`` steps: seeded shuffles of ``0..n-1``, epoch after epoch.

    Every example is seen once per epoch; a batch may straddle two epochs.
    """
    generator = torch.Generator().manual_seed(seed)
    stream: list[int] = []
    needed = steps * batch_size
    while len(stream) < needed:
        stream.extend(torch.randperm(n, generator=generator).tolist())
    return [
        torch.tensor(stream[s * batch_size : (s + 1) * batch_size], dtype=torch.long)
        for s in range(steps)
    ]


def sliced_weighted_nll(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                        labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """``weighted_nll`` computing the vocabulary projection only where there is a label.

    The same value, far cheaper for a real vocabulary (49k entries for SmolLM2): most
    positions are prompt, and their ``[L, vocab]`` logits would be computed only to be
    ignored. Falls back to the full logits for a model that changes its logits after the
    output layer (soft-capping) or has no separate decoder.
    """
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    decoder = inner.get_decoder() if hasattr(inner, "get_decoder") else None
    head = inner.get_output_embeddings() if hasattr(inner, "get_output_embeddings") else None
    if decoder is None or head is None or getattr(inner.config, "final_logit_softcapping", None):
        logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
        return weighted_nll(logits, labels, weights)
    hidden = decoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    targets = next_token_labels(labels)
    keep = targets != IGNORE_INDEX
    nll = F.cross_entropy(head(hidden[keep]).float(), targets[keep], reduction="none")
    token_weights = weights[:, None].expand_as(targets)[keep].to(nll.dtype)
    return (nll * token_weights).sum() / token_weights.sum().clamp_min(1e-12)
