"""Training examples, the reward-weighted selection, and their encoding into tensors.

The objective trained by ``trainer.ml.lora`` is reward-weighted supervised fine-tuning
(filtered behaviour cloning weighted by reward): an example whose reward is below
``min_reward`` is dropped, every other example ``i`` gets the weight
``a_i = weight_i * reward_i`` (rewards live on the contract's non-negative scale, so
examples with ``a_i <= 0`` are dropped too), and the loss is the ``a``-weighted mean over
response tokens of the next-token negative log-likelihood::

    L = sum_i a_i * sum_{t in response_i} -log p(y_t | y_<t)  /  sum_i a_i * |response_i|

Prompt and padding tokens carry no loss. ``HyperParams.objective = "dpo"`` trains on
preference pairs instead (see ``preference_pairs`` and ``trainer.ml.preference``).

Examples are put in a canonical order (by subject, prompt, response, reward, weight) so
the result does not depend on the order a database query happened to return them in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

IGNORE_INDEX = -100  # the label value torch's cross-entropy skips


@dataclass(frozen=True)
class TrainingExample:
    prompt: str
    response: str
    reward: float
    weight: float
    subject_id: str

    def sort_key(self) -> tuple[str, str, str, float, float]:
        return (self.subject_id, self.prompt, self.response, self.reward, self.weight)


def canonical_order(examples: Iterable[TrainingExample]) -> list[TrainingExample]:
    return sorted(examples, key=TrainingExample.sort_key)


def examples_sha256(examples: Iterable[TrainingExample]) -> str:
    """Digest of a set of examples, independent of the order they were given in."""
    h = hashlib.sha256()
    for ex in canonical_order(examples):
        h.update(json.dumps(asdict(ex), sort_keys=True, ensure_ascii=False).encode())
        h.update(b"\n")
    return h.hexdigest()


def example_weight(example: TrainingExample, min_reward: float) -> float:
    """The weight ``a_i`` of one example in the objective; 0.0 means it is dropped."""
    if example.reward < min_reward:
        return 0.0
    return max(example.weight * example.reward, 0.0)


def select_weighted(
    examples: Iterable[TrainingExample], min_reward: float
) -> list[tuple[TrainingExample, float]]:
    """The examples that take part in training, in canonical order, with their weights."""
    weighted = ((ex, example_weight(ex, min_reward)) for ex in canonical_order(examples))
    return [(ex, w) for ex, w in weighted if w > 0.0]


def preference_pairs(
    examples: Iterable[TrainingExample], min_reward: float
) -> list[tuple[TrainingExample, TrainingExample, float]]:
    """(chosen, rejected, pair weight) for the preference objective, in canonical order.

    A pair is two responses to the same prompt with ``r_chosen > r_rejected`` where the
    chosen one passes ``min_reward`` (a pair never pulls towards a merely "less bad"
    response); its weight is ``(r_chosen - r_rejected) * weight_chosen * weight_rejected``.
    """
    by_prompt: dict[str, list[TrainingExample]] = {}
    for ex in canonical_order(examples):
        by_prompt.setdefault(ex.prompt, []).append(ex)
    pairs = []
    for prompt in sorted(by_prompt):
        group = by_prompt[prompt]
        for chosen in group:
            if chosen.reward < min_reward:
                continue
            for rejected in group:
                weight = (chosen.reward - rejected.reward) * chosen.weight * rejected.weight
                if chosen.reward > rejected.reward and weight > 0:
                    pairs.append((chosen, rejected, weight))
    return pairs


@dataclass(frozen=True)
class EncodedExamples:
    """Right-padded token tensors, one row per example; loss only where labels != -100."""

    input_ids: torch.Tensor  # [N, L] long
    attention_mask: torch.Tensor  # [N, L] long
    labels: torch.Tensor  # [N, L] long, IGNORE_INDEX on prompt and padding
    weights: torch.Tensor  # [N] float32, the per-example weight a_i

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    def select(self, indices: torch.Tensor) -> EncodedExamples:
        """Rows ``indices``, trimmed to the longest of them (less padding per batch)."""
        mask = self.attention_mask[indices]
        width = int(mask.sum(dim=1).max())
        return EncodedExamples(
            self.input_ids[indices, :width],
            mask[:, :width],
            self.labels[indices, :width],
            self.weights[indices],
        )

    def to(self, device: Any) -> EncodedExamples:
        return EncodedExamples(
            *(t.to(device, non_blocking=True) for t in (
                self.input_ids, self.attention_mask, self.labels, self.weights
            ))
        )


def _token_ids(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def encode_pair(tokenizer: Any, prompt: str, response: str, max_len: int) -> tuple[list[int], int]:
    """Token ids of ``<bos> prompt response <eos>`` and where the response starts.

    Over ``max_len`` the prompt loses tokens from its start first (the end of a prompt is
    what the response answers), then the response from its end.
    """
    if max_len < 2:
        raise ValueError("max_len must be at least 2")
    bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
    eos = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
    prompt_ids = bos + _token_ids(tokenizer, prompt)
    response_ids = (_token_ids(tokenizer, response) + eos)[: max_len - 1]
    keep = max_len - len(response_ids)
    prompt_ids = prompt_ids[-keep:] if prompt_ids else []
    return prompt_ids + response_ids, len(prompt_ids)


def encode_examples(
    tokenizer: Any,
    examples: Sequence[TrainingExample],
    max_len: int,
    weights: Sequence[float] | None = None,
) -> EncodedExamples:
    """Encode examples in the order given (call ``select_weighted`` first for training).

    ``weights`` defaults to each example's own ``weight`` field.
    """
    import torch

    if not examples:
        raise ValueError("no examples to encode")
    rows = [encode_pair(tokenizer, ex.prompt, ex.response, max_len) for ex in examples]
    width = max(len(ids) for ids, _ in rows)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    labels = torch.full((len(rows), width), IGNORE_INDEX, dtype=torch.long)
    for i, (ids, start) in enumerate(rows):
        row = torch.tensor(ids, dtype=torch.long)
        input_ids[i, : len(ids)] = row
        attention[i, : len(ids)] = 1
        labels[i, start : len(ids)] = row[start:]
    w = [ex.weight for ex in examples] if weights is None else list(weights)
    return EncodedExamples(input_ids, attention, labels, torch.tensor(w, dtype=torch.float32))
