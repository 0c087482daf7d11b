"""The reward-weighted SFT loss and the deterministic batch schedule (see ``data``)."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from trainer.ml.data import IGNORE_INDEX

# Response positions whose vocabulary-wide work (fp32 logits, log-softmax) is done at once.
BLOCK_ROWS = 256


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
    found = response_logits(model, input_ids, attention_mask, labels)
    if found is None:
        logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
        return weighted_nll(logits, labels, weights)
    return weighted_token_nll(*found, weights)


def weighted_token_nll(logits: torch.Tensor, targets: torch.Tensor, keep: torch.Tensor,
                       weights: torch.Tensor) -> torch.Tensor:
    """``weighted_nll`` from the response positions' logits (``response_logits``)."""
    nll = token_nll(logits, targets)
    token_weights = weights[:, None].expand_as(keep)[keep].to(nll.dtype)
    return (nll * token_weights).sum() / token_weights.sum().clamp_min(1e-12)


def row_blocks(rows: int, size: int = BLOCK_ROWS) -> list[int]:
    """Sizes of consecutive blocks of ``rows`` rows, ``size`` each. Never a block of a
    single row after others (the last takes it): torch reduces a lone row across threads,
    in another order than the rows of a block, and each row's value must not depend on
    the blocks."""
    sizes = [size] * (rows // size) + ([rows % size] if rows % size else [])
    if len(sizes) > 1 and sizes[-1] == 1:
        sizes[-2:] = [size + 1]
    return sizes or [0]


def _nll(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.float(), targets, reduction="none")


def token_nll(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The NLL of each row's target, ``[T]``: ``cross_entropy(logits.float(), targets)``
    taken ``BLOCK_ROWS`` rows at a time (each row's value is the same). With gradients,
    a block's fp32 copy and log-softmax are recomputed in the backward pass rather than
    kept: over a whole batch's response tokens they were 8 bytes per position and
    vocabulary entry (2,900 positions x 49,152: 1.1 GB), their gradients as much again."""
    parts = []
    for block, wanted in zip(logits.split(row_blocks(len(targets))),
                             targets.split(row_blocks(len(targets))), strict=True):
        if torch.is_grad_enabled() and block.requires_grad:
            parts.append(checkpoint(_nll, block, wanted, use_reentrant=False))
        else:
            parts.append(_nll(block, wanted))
    return torch.cat(parts)


def response_logits(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
    """(logits ``[T, vocab]`` at the T positions that predict a response token, in the
    head's dtype (bf16 under autocast: the consumers take fp32 a block of rows at a time),
    those tokens ``[T]``, the ``[B, L]`` mask of where they are), or None for a model whose
    logits cannot be computed position by position (see ``sliced_weighted_nll``)."""
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    decoder = inner.get_decoder() if hasattr(inner, "get_decoder") else None
    head = inner.get_output_embeddings() if hasattr(inner, "get_output_embeddings") else None
    if decoder is None or head is None or getattr(inner.config, "final_logit_softcapping", None):
        return None
    # No KV cache: nothing reads it, and a layer whose activations are recomputed
    # (trainer.ml.lora.recompute_activations) would drop it with a warning.
    hidden = decoder(input_ids=input_ids, attention_mask=attention_mask,
                     use_cache=False).last_hidden_state
    targets = next_token_labels(labels)
    keep = targets != IGNORE_INDEX
    return head(hidden[keep]), targets[keep], keep
