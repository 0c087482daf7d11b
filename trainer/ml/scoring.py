"""Per-example response log-likelihoods under a model (the torch half of the gate)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from trainer.ml.data import IGNORE_INDEX, TrainingExample, encode_examples
from trainer.ml.load import ServingModel, autocast_for
from trainer.ml.objective import next_token_labels, response_token_nll


def response_logliks(
    serving: ServingModel, examples: Sequence[TrainingExample], max_len: int, batch_size: int = 8
) -> list[float]:
    """Mean log-probability per response token of each example, in the order given."""
    data = encode_examples(serving.tokenizer, examples, max_len)
    out: list[float] = []
    with torch.inference_mode(), autocast_for(serving.device):
        for start in range(0, len(data), batch_size):
            batch = data.select(torch.arange(start, min(start + batch_size, len(data))))
            batch = batch.to(serving.device)
            logits = serving.model(
                input_ids=batch.input_ids, attention_mask=batch.attention_mask
            ).logits
            nll = response_token_nll(logits, batch.labels)
            counts = (next_token_labels(batch.labels) != IGNORE_INDEX).sum(dim=1).clamp_min(1)
            out.extend((-nll.sum(dim=1) / counts).float().tolist())
    return out
