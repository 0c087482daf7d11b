"""The sampling loop the harness serves with: k answers per prompt, batched, on CPU or GPU.

Three savings over ``model.generate(num_return_sequences=k)`` (``bench/loop.py`` measures
them against it on the same prompts):

1. each prompt is prefilled once and its KV cache repeated k times, not prefilled k
   times (task prompts with a system message and an example are ~150 tokens, answers ~40:
   prefill dominates);
2. a row leaves the batch as soon as it is finished (end of sequence or the stop rule),
   so the batch does not keep computing for it until the slowest row ends;
3. the stop rule runs only on rows whose latest token could complete an answer.

Reproducible: k samples per prompt, in prompt order, the same for a fixed seed, prompt
list, batch size and thread count. Sampling draws from its own ``torch.Generator`` (one
per batch, seeded from ``seed`` and the batch's first prompt), so nothing else that uses
torch's global random state changes the samples; temperature 0 is greedy.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from harness.stops import STOP_CHARS, StopRule


@dataclass(frozen=True)
class Sample:
    prompt_index: int
    text: str  # cut where the stop rule said the answer ends
    new_tokens: int  # tokens generated for it (what it cost), end of sequence included
    stopped: bool  # end of sequence or stop rule, rather than max_new_tokens


@dataclass
class GenStats:
    seconds: float = 0.0
    new_tokens: int = 0  # tokens produced, up to and including the end of sequence
    computed_tokens: int = 0  # rows x steps: what the batches paid for

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / self.seconds if self.seconds else 0.0


@torch.inference_mode()
def sample(model: Any, tok: Any, prompts: Sequence[list[int]], *, k: int = 1,
           temperature: float = 0.0, max_new_tokens: int = 96, batch_size: int = 64,
           seed: int = 0, stop: StopRule | None = None, stats: GenStats | None = None,
           device: Any = "cpu") -> list[Sample]:
    """``k`` samples for each prompt (token ids), in prompt order."""
    order = sorted(range(len(prompts)), key=lambda i: (len(prompts[i]), i))  # less padding
    per_batch = max(1, batch_size // k)  # prompts per batch; rows = prompts x k
    out: list[Sample] = []
    started = time.perf_counter()
    for b in range(0, len(order), per_batch):
        idx = order[b: b + per_batch]
        gen = torch.Generator(device=device).manual_seed(seed * 1_000_003 + b)
        batch = _Batch(model, tok, [prompts[i] for i in idx], idx, k, device)
        out += batch.run(temperature, max_new_tokens, gen, stop, stats)
    if stats is not None:
        stats.seconds += time.perf_counter() - started
        stats.new_tokens += sum(s.new_tokens for s in out)
    out.sort(key=lambda s: s.prompt_index)  # stable: a prompt's samples keep their order
    return out


class _Batch:
    """Rows = prompts x k, left-padded; a row is dropped from the cache when it finishes."""

    def __init__(self, model: Any, tok: Any, prompts: list[list[int]], idx: list[int], k: int,
                 device: Any) -> None:
        self.model, self.tok, self.device = model, tok, device
        width = max(len(p) for p in prompts)
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        self.ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=device)
        self.mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts],
                                 device=device)
        self.rows = [(i, j) for i in idx for j in range(k)]  # (prompt index, sample) per row
        self.k = k

    def run(self, temperature: float, max_new: int, gen: torch.Generator,
            stop: StopRule | None, stats: GenStats | None) -> list[Sample]:
        mask, k = self.mask, self.k
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        res = self.model(input_ids=self.ids, attention_mask=mask, position_ids=pos,
                         use_cache=True, logits_to_keep=1)
        cache = res.past_key_values if getattr(res, "cache", None) is None else res.cache
        if k > 1:
            cache.batch_repeat_interleave(k)
        mask, logits = mask.repeat_interleave(k, 0), res.logits[:, -1].repeat_interleave(k, 0)
        next_pos = pos[:, -1:].repeat_interleave(k, 0) + 1
        alive = list(range(len(self.rows)))  # row ids still in the batch, in batch order
        tokens: list[list[int]] = [[] for _ in self.rows]
        done: dict[int, Sample] = {}
        for step in range(max_new):
            token = _pick(logits.float(), temperature, gen)
            if stats is not None:
                stats.computed_tokens += len(alive)
            keep = []
            for slot, (row, t) in enumerate(zip(alive, token.tolist(), strict=True)):
                tokens[row].append(t)
                text = self._finished(tokens[row], t, stop)
                if text is not None:
                    done[row] = Sample(self.rows[row][0], text, len(tokens[row]), True)
                elif step == max_new - 1:  # cut off: the whole text, not stopped
                    text = str(self.tok.decode(tokens[row], skip_special_tokens=True))
                    done[row] = Sample(self.rows[row][0], text, len(tokens[row]), False)
                else:
                    keep.append(slot)
            if not keep:
                break
            if len(keep) < len(alive):
                sel = torch.tensor(keep, device=self.device)
                cache.batch_select_indices(sel)
                mask, next_pos, token = mask[sel], next_pos[sel], token[sel]
                alive = [alive[s] for s in keep]
            mask = torch.cat([mask, torch.ones(len(alive), 1, dtype=mask.dtype, device=self.device)], 1)
            res = self.model(input_ids=token[:, None], attention_mask=mask, position_ids=next_pos,
                             cache=cache, use_cache=True)
            logits, next_pos = res.logits[:, -1], next_pos + 1
        return [done[r] for r in range(len(self.rows))]

    def _finished(self, ids: list[int], last: int, stop: StopRule | None) -> str | None:
        """The answer text when the row is complete, else None."""
        if last == self.tok.eos_token_id:
            return str(self.tok.decode(ids[:-1], skip_special_tokens=True))
        if stop is None or not any(c in self.tok.decode([last]) for c in STOP_CHARS):
            return None
        text = self.tok.decode(ids, skip_special_tokens=True)
        cut = stop(text)
        return None if cut is None else str(text[:cut])


def _pick(logits: torch.Tensor, temperature: float, gen: torch.Generator) -> torch.Tensor:
    """The next token of each row: greedy at temperature 0, else a draw from the softmax.

    The draw inverts the cumulative distribution (one uniform number per row, a binary
    search): exact, and on the CPU about ten times faster than ``torch.multinomial``
    over a 49k vocabulary, which was a sixth of the sampling time. The running sum is in
    float64, so its rounding cannot move mass between tokens that matters."""
    if temperature <= 0:
        return logits.argmax(-1)
    cumulative = torch.softmax(logits / temperature, dim=-1).double().cumsum_(-1)
    draw = torch.rand(logits.shape[0], 1, generator=gen, dtype=torch.float64,
                      device=logits.device) * cumulative[:, -1:]
    token = torch.searchsorted(cumulative, draw, right=True)[:, 0]
    return token.clamp_(max=logits.shape[-1] - 1)  # a draw of exactly the total
