"""The engine's offline mode: k answers per prompt, batched, on CPU or GPU (the harness,
the gate's rollouts and probe sets, the demo).

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

Every forward pass goes through ``forward`` (the pool's, under its lock with the job's
adapter active), so a gate in a training thread and the gateway's batcher share one base.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from inference.stops import STOP_CHARS, StopRule
from inference.types import GenStats, Sample

Forward = Callable[..., Any]  # the model's forward pass (keyword arguments)


@dataclass(frozen=True)
class Memory:
    """What a batch may hold at once: its KV cache and its prefill's attention scores.

    A row of ``tokens`` tokens keeps ``kv_per_token * tokens`` bytes of cache; its prefill
    over ``length`` prompt tokens holds ``heads * length**2`` scores and their softmax
    (``score_bytes`` each: the CPU's attention with a padding mask materialises them). A
    batch is as many rows as fit ``budget`` bytes, one prompt at least. On SmolLM2-135M in
    bf16 a coding row of 500 prompt tokens costs about 30 MB: a batch of 128 such rows held
    3.7 GB at its prefill."""

    budget: int
    kv_per_token: int
    heads: int
    score_bytes: int = 8

    def fits(self, rows: int, length: int, max_new: int) -> bool:
        per_row = self.kv_per_token * (length + max_new) + self.score_bytes * self.heads * length ** 2
        return rows * per_row <= self.budget


def batches(lengths: Sequence[int], k: int, batch_size: int, max_new: int,
            memory: Memory | None) -> list[tuple[int, list[int]]]:
    """(first position in the order, prompt indexes) of each batch, shortest prompts first
    (less padding); a batch ends at ``batch_size`` rows or where memory would not fit."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    per_batch = max(1, batch_size // k)  # prompts per batch; rows = prompts x k
    found, b = [], 0
    while b < len(order):
        end = b + 1
        while (end < len(order) and end - b < per_batch and
               (memory is None or memory.fits((end + 1 - b) * k, lengths[order[end]], max_new))):
            end += 1
        found.append((b, order[b:end]))
        b = end
    return found


@torch.inference_mode()
def sample(model: Forward, tok: Any, prompts: Sequence[list[int]], *, k: int = 1,
           temperature: float = 0.0, max_new_tokens: int = 96, batch_size: int = 64,
           seed: int = 0, stop: StopRule | None = None, stats: GenStats | None = None,
           device: Any = "cpu", memory: Memory | None = None) -> list[Sample]:
    """``k`` samples for each prompt (token ids), in prompt order."""
    out: list[Sample] = []
    started = time.perf_counter()
    for b, idx in batches([len(p) for p in prompts], k, batch_size, max_new_tokens, memory):
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

    def __init__(self, model: Forward, tok: Any, prompts: list[list[int]], idx: list[int], k: int,
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
