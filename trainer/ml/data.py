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

Before either objective, ``HyperParams.selection`` may narrow the examples among the
answers to the same prompt (several sessions served the same task: k samples):
``best_of_k`` keeps the best ``keep_per_prompt`` distinct answers with reward >=
``min_reward`` (rejection sampling), ``best_worst`` keeps the best such answer and the
worst lower-rewarded one (one preference pair per prompt), ``all`` keeps everything.
Ties go to the shorter answer, then to the text, so the choice is deterministic.

Examples are put in a canonical order (by subject, prompt, response, reward, weight) so
the result does not depend on the order a database query happened to return them in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from trainer.ml.prompts import prompt_ids as render

if TYPE_CHECKING:
    import torch

IGNORE_INDEX = -100  # the label value torch's cross-entropy skips


Message = tuple[str, str]  # (role, content)
SELECTIONS = ("all", "best_of_k", "best_worst")


@dataclass(frozen=True)
class TrainingExample:
    prompt: str
    response: str
    reward: float
    weight: float
    subject_id: str
    # The chat messages the model was served (see ``trainer.ml.prompts``); None for
    # history that recorded only a transcript.
    messages: tuple[Message, ...] | None = None

    def sort_key(self) -> tuple[str, str, str, float, float]:
        return (self.subject_id, self.prompt, self.response, self.reward, self.weight)

    def prompt_key(self) -> tuple[str, tuple[Message, ...]]:
        """What makes two examples answers to the same prompt."""
        return self.prompt, self.messages or ()

    def chat(self) -> list[dict[str, str]] | None:
        return [{"role": r, "content": c} for r, c in self.messages] if self.messages else None


def canonical_order(examples: Iterable[TrainingExample]) -> list[TrainingExample]:
    return sorted(examples, key=TrainingExample.sort_key)


def example_json(example: Any) -> str:
    """An example's canonical JSON line; ``messages`` and ``correction`` only when present,
    so examples recorded before they existed keep their digests."""
    # The fields as they are: ``asdict``'s deep copy changes nothing JSON prints (no field
    # holds a dataclass) and was most of an audit's cost of rebuilding every example.
    data = {f.name: getattr(example, f.name) for f in fields(example)}
    for later in ("messages", "correction"):  # (added later: only where there is one)
        if data.get(later) is None:
            data.pop(later, None)
    return json.dumps(data, sort_keys=True, ensure_ascii=False)


def examples_sha256(examples: Iterable[TrainingExample]) -> str:
    """Digest of a set of examples, independent of the order they were given in."""
    h = hashlib.sha256()
    for ex in canonical_order(examples):
        h.update(example_json(ex).encode())
        h.update(b"\n")
    return h.hexdigest()


def select_answers(examples: Iterable[TrainingExample], selection: str, keep_per_prompt: int,
                   min_reward: float) -> list[TrainingExample]:
    """The examples ``selection`` keeps (see the module docstring), in canonical order."""
    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS}")
    ordered = canonical_order(examples)
    if selection == "all":
        return ordered
    groups: dict[tuple[str, tuple[Message, ...]], list[TrainingExample]] = {}
    for ex in ordered:
        groups.setdefault(ex.prompt_key(), []).append(ex)
    kept: list[TrainingExample] = []
    for key in sorted(groups):
        ranked = sorted(groups[key], key=lambda e: (-e.reward, len(e.response), e.response))
        best = _distinct([e for e in ranked if e.reward >= min_reward], keep_per_prompt)
        if selection == "best_of_k":
            kept += best
        elif best and ranked[-1].reward < best[0].reward:
            kept += [best[0], ranked[-1]]
    return canonical_order(kept)


def _distinct(ranked: list[TrainingExample], limit: int) -> list[TrainingExample]:
    out: list[TrainingExample] = []
    for ex in ranked:
        if len(out) < limit and all(ex.response != o.response for o in out):
            out.append(ex)
    return out


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


def selected_examples(examples: Iterable[TrainingExample], selection: str, keep_per_prompt: int,
                      min_reward: float, objective: str = "sft") -> list[TrainingExample]:
    """The examples a run actually trains on, in canonical order: what ``selection`` keeps
    and the objective uses (a positive weight; for ``dpo``, a place in some preference
    pair). Pure, so the run records them and an auditor derives them again."""
    chosen = select_answers(examples, selection, keep_per_prompt, min_reward)
    if objective == "dpo":
        paired = {id(ex) for chosen_ex, rejected, _ in preference_pairs(chosen, min_reward)
                  for ex in (chosen_ex, rejected)}
        return [ex for ex in chosen if id(ex) in paired]
    return [ex for ex, _ in select_weighted(chosen, min_reward)]


def preference_pairs(
    examples: Iterable[TrainingExample], min_reward: float
) -> list[tuple[TrainingExample, TrainingExample, float]]:
    """(chosen, rejected, pair weight) for the preference objective, in canonical order.

    A pair is two responses to the same prompt (its text and the messages served,
    ``prompt_key``) with ``r_chosen > r_rejected`` where the
    chosen one passes ``min_reward`` (a pair never pulls towards a merely "less bad"
    response); its weight is ``(r_chosen - r_rejected) * weight_chosen * weight_rejected``.
    """
    by_prompt: dict[tuple[str, tuple[Message, ...]], list[TrainingExample]] = {}
    for ex in canonical_order(examples):  # the same words after another conversation differ
        by_prompt.setdefault(ex.prompt_key(), []).append(ex)
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


def encode_pair(tokenizer: Any, prompt: str, response: str, max_len: int,
                messages: Any = None) -> tuple[list[int], int]:
    """Token ids of ``<bos> prompt response <eos>`` (the prompt rendered from ``messages``
    when given: ``trainer.ml.prompts``) and where the response starts.

    Over ``max_len`` the prompt loses tokens from its start first (the end of a prompt is
    what the response answers), then the response from its end.
    """
    if max_len < 2:
        raise ValueError("max_len must be at least 2")
    eos = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
    prompt_ids = render(tokenizer, prompt, messages)
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
    rows = [encode_pair(tokenizer, ex.prompt, ex.response, max_len, ex.chat()) for ex in examples]
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
