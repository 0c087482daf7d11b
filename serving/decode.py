"""One mixed-adapter batch, decoded: prefill once, then a step per token for the rows
still running (``serving.batcher`` explains the batching)."""

from __future__ import annotations

import time
from typing import Any

import torch

from serving.batcher import GenJob, GenResult
from serving.pool import AdapterPool

REPLACEMENT = "\ufffd"  # what decoding shows for an incomplete multi-byte character


class _Row:
    def __init__(self, job: GenJob, prompt: list[int]) -> None:
        self.job, self.prompt = job, prompt
        self.tokens: list[int] = []
        self.sent = 0  # characters already streamed
        self.text = ""
        self.finish: str | None = None
        self.eos = 0  # the end-of-sequence token, generated (it counts) but not text
        self.hold = max((len(s) for s in job.stops), default=1) - 1

    def add(self, token: int, tok: Any) -> None:
        self.tokens.append(token)
        if token == tok.eos_token_id:
            self.tokens.pop()
            self.finish, self.eos = "stop", 1
        self.text = str(tok.decode(self.tokens, skip_special_tokens=True))
        cut = min((i for i in (self.text.find(s) for s in self.job.stops) if i >= 0), default=-1)
        if cut >= 0:
            self.text, self.finish = self.text[:cut], "stop"
        elif self.finish is None and len(self.tokens) + self.eos >= self.job.max_new_tokens:
            self.finish = "length"
        self._stream()

    def _stream(self) -> None:
        if self.job.on_delta is None:
            return
        upto = len(self.text) if self.finish else max(self.sent, len(self.text) - self.hold)
        while not self.finish and upto > self.sent and self.text[upto - 1] == REPLACEMENT:
            upto -= 1
        if upto > self.sent:
            self.job.on_delta(self.text[self.sent:upto])
            self.sent = upto


@torch.inference_mode()
def decode_batch(pool: AdapterPool, jobs: list[GenJob]) -> list[GenResult]:
    from trainer.ml.load import autocast_for, base_dtype

    started = time.perf_counter()
    tok, device = pool.tokenizer, pool.device
    rows = [_Row(j, j.prompt) for j in jobs]  # the batcher tokenized them
    names = pool.row_names([j.digest for j in jobs])
    width = max(len(r.prompt) for r in rows)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    ids = torch.tensor([[pad] * (width - len(r.prompt)) + r.prompt for r in rows], device=device)
    mask = torch.tensor([[0] * (width - len(r.prompt)) + [1] * len(r.prompt) for r in rows],
                        device=device)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    gen = torch.Generator(device=device).manual_seed(jobs[0].seed or 0)
    temps = torch.tensor([j.temperature for j in jobs], device=device, dtype=torch.float32)
    extra = {"adapter_names": names} if names is not None else {}
    with autocast_for(device, base_dtype(device, pool.precision)):
        res = pool.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True,
                         logits_to_keep=1, **extra)
        cache = res.past_key_values if getattr(res, "cache", None) is None else res.cache
        logits, next_pos = res.logits[:, -1], pos[:, -1:] + 1
        alive = list(range(len(rows)))
        while alive:
            token = _pick(logits.float(), temps, gen)
            keep = []
            for slot, (row, t) in enumerate(zip(alive, token.tolist(), strict=True)):
                rows[row].add(t, tok)
                if rows[row].finish is None:
                    keep.append(slot)
            if not keep:
                break
            if len(keep) < len(alive):
                sel = torch.tensor(keep, device=device)
                cache.batch_select_indices(sel)
                mask, next_pos, token, temps = mask[sel], next_pos[sel], token[sel], temps[sel]
                alive = [alive[s] for s in keep]
                if names is not None:
                    extra = {"adapter_names": [names[r] for r in alive]}
            mask = torch.cat([mask, torch.ones(len(alive), 1, dtype=mask.dtype, device=device)], 1)
            res = pool.model(input_ids=token[:, None], attention_mask=mask, position_ids=next_pos,
                             cache=cache, use_cache=True, **extra)
            logits, next_pos = res.logits[:, -1], next_pos + 1
    seconds = time.perf_counter() - started
    return [GenResult(r.text, len(r.prompt), len(r.tokens) + r.eos, str(r.finish), seconds)
            for r in rows]


def _pick(logits: torch.Tensor, temps: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Greedy for rows at temperature 0, else a draw from the tempered softmax."""
    greedy = logits.argmax(-1)
    if not bool((temps > 0).any()):
        return greedy
    scaled = logits / temps.clamp(min=1e-5)[:, None]
    drawn = torch.multinomial(torch.softmax(scaled, dim=-1), 1, generator=gen)[:, 0]
    return torch.where(temps > 0, drawn, greedy)
