"""How far a policy is from the base on a task's own tokens: the KL anchor of the SFT loss
and the KL a run records.

A LoRA successor is the base with an adapter, so the base is the same model with the
adapter switched off (``disable_adapter``): no second copy is held. On each response
position ``t`` (the prompt and the answer before it given), the exact KL over the
vocabulary between the policy's next-token distribution ``p_t`` and the base's ``q_t``::

    KL(p || q) = sum_v p_t(v) (log p_t(v) - log q_t(v))      (reverse: what the anchor adds)
    KL(q || p)                                                (forward: RL's Razor's measure)

averaged over the response tokens. RL's Razor (arXiv 2509.04259) found the KL from the
base on the new task's distribution to predict how much a fine-tuned model forgets; a run
records both directions on the answers it trained on (``kl_from_base``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F

from trainer.ml.data import EncodedExamples
from trainer.ml.load import autocast_for
from trainer.ml.objective import response_logits, row_blocks


@contextlib.contextmanager
def base_only(model: Any) -> Iterator[None]:
    """The model with its adapter switched off (a model without one is the base already)."""
    switch = getattr(model, "disable_adapter", None)
    with switch() if switch is not None else contextlib.nullcontext():
        yield


def token_kl(logits: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """KL(softmax(logits) || softmax(reference)) per row in fp32, ``[T]``, taken
    ``BLOCK_ROWS`` rows at a time: each row's value is the same, and the five fp32
    ``[rows, vocab]`` intermediates stay a block's (over 2,900 response positions of
    SmolLM2's 49,152-entry vocabulary they were 2.8 GB)."""
    sizes = row_blocks(len(logits))
    return torch.cat([_kl(p, q) for p, q in zip(logits.split(sizes), reference.split(sizes),
                                                 strict=True)])


def _kl(logits: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    logp, logq = F.log_softmax(logits.float(), dim=-1), F.log_softmax(reference.float(), dim=-1)
    return (logp.exp() * (logp - logq)).sum(dim=-1)


def base_logits(model: Any, batch: EncodedExamples) -> torch.Tensor | None:
    with torch.no_grad(), base_only(model):
        found = response_logits(model, batch.input_ids, batch.attention_mask, batch.labels)
    return None if found is None else found[0]


def kl_from_base(model: Any, data: EncodedExamples, device: torch.device, dtype: torch.dtype,
                 batch_size: int) -> dict[str, Any]:
    """Mean per-token KL between the model and the base on ``data``'s response tokens, both
    directions; empty for a model whose logits cannot be taken position by position."""
    model.eval()
    totals = {"reverse": 0.0, "forward": 0.0}
    tokens = 0
    with torch.no_grad(), autocast_for(device, dtype):
        for start in range(0, len(data), batch_size):
            batch = data.select(torch.arange(start, min(start + batch_size, len(data)))).to(device)
            found = response_logits(model, batch.input_ids, batch.attention_mask, batch.labels)
            reference = base_logits(model, batch)
            if found is None or reference is None:
                return {}
            totals["reverse"] += float(token_kl(found[0], reference).sum())
            totals["forward"] += float(token_kl(reference, found[0]).sum())
            tokens += int(found[1].numel())
    per_token = {k: v / tokens if tokens else 0.0 for k, v in totals.items()}
    return {**per_token, "tokens": tokens, "on": "the response tokens of the answers it trained on"}
