"""The base model's representation of a text: what the learned router classifies.

The last hidden state averaged over the text's tokens (its last ``MAX_TOKENS``: the user's
message is at the end), from the frozen base the adapters share, so the router needs no
weights of its own beyond one linear layer (``harness.routing.classifier``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

MAX_TOKENS = 256
BATCH = 16


@torch.inference_mode()
def represent(forward: Callable[..., Any], tokenizer: Any, texts: Sequence[str],
              device: torch.device) -> torch.Tensor:
    """One row per text: the mean of the last hidden state over its tokens (float32)."""
    rows = []
    for start in range(0, len(texts), BATCH):
        ids = [list(tokenizer(t, add_special_tokens=False)["input_ids"])[-MAX_TOKENS:] or
               [tokenizer.eos_token_id] for t in texts[start:start + BATCH]]
        width = max(map(len, ids))
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        batch = torch.tensor([row + [pad] * (width - len(row)) for row in ids], device=device)
        mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in ids], device=device)
        hidden = forward(input_ids=batch, attention_mask=mask, output_hidden_states=True).hidden_states[-1]
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        rows.append(((hidden * weights).sum(1) / weights.sum(1)).float().cpu())
    return torch.cat(rows) if rows else torch.empty(0)
