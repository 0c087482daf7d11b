"""A running mixed-adapter batch (``serving.batcher`` explains the batching): rows join
between steps and leave when they end, so a request that arrives while others decode
starts at the next step instead of waiting for the whole batch, and an answer goes back
as soon as its own row ends.

A joining group is prefilled on its own, then its KV cache is appended to the running
one, both left-padded to one length: padded positions are masked out and each row keeps
its own position ids, so a row's numbers do not depend on who shares its batch.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from harness.stops import STOPS
from serving.batcher import GenJob, GenResult
from serving.pool import AdapterPool

REPLACEMENT = "\ufffd"  # what decoding shows for an incomplete multi-byte character


class _Row:
    def __init__(self, job: GenJob) -> None:
        self.job, self.prompt = job, job.prompt
        self.tokens: list[int] = []
        self.sent = 0  # characters already streamed
        self.text = ""
        self.finish: str | None = None
        self.eos = 0  # the end-of-sequence token, generated (it counts) but not text
        self.hold = max((len(s) for s in job.stops), default=1) - 1
        self.rule = STOPS.get(job.stop_after)
        self.started = time.perf_counter()

    def add(self, token: int, tok: Any) -> None:
        self.tokens.append(token)
        if token == tok.eos_token_id:
            self.tokens.pop()
            self.finish, self.eos = "stop", 1
        self.text = str(tok.decode(self.tokens, skip_special_tokens=True))
        cut = min((i for i in (self.text.find(s) for s in self.job.stops) if i >= 0), default=-1)
        end = self.rule(self.text) if cut < 0 and self.rule is not None else None
        if cut >= 0:
            self.text, self.finish = self.text[:cut], "stop"
        elif end is not None:
            self.text, self.finish = self.text[:end], "stop"
        elif self.finish is None and len(self.tokens) + self.eos >= self.job.max_new_tokens:
            self.finish = "length"
        self._stream()
        if self.finish is not None:
            self.job.future.set_result(GenResult(
                self.text, len(self.prompt), len(self.tokens) + self.eos, self.finish,
                time.perf_counter() - self.started))

    def _stream(self) -> None:
        if self.job.on_delta is None:
            return
        upto = len(self.text) if self.finish else max(self.sent, len(self.text) - self.hold)
        while not self.finish and upto > self.sent and self.text[upto - 1] == REPLACEMENT:
            upto -= 1
        if upto > self.sent:
            self.job.on_delta(self.text[self.sent:upto])
            self.sent = upto


class Decoding:
    """The rows decoding now, their cache, attention masks, positions and next tokens."""

    def __init__(self, pool: AdapterPool, seed: int) -> None:
        from trainer.ml.load import autocast_for, base_dtype

        self.pool, self.tok, self.device = pool, pool.tokenizer, pool.device
        self.autocast = lambda: autocast_for(pool.device, base_dtype(pool.device, pool.precision))
        self.gen = torch.Generator(device=pool.device).manual_seed(seed)
        self.rows: list[_Row] = []  # alive, in batch order
        self.cache: Any = None
        self.mask = self.next_pos = self.token = self.temps = torch.empty(0)

    @property
    def alive(self) -> int:
        return len(self.rows)

    def fail(self, exc: BaseException) -> None:
        for row in self.rows:
            if not row.job.future.done():
                row.job.future.set_exception(exc)
        self.rows = []

    @torch.inference_mode()
    def join(self, jobs: list[GenJob]) -> None:
        """Prefill ``jobs`` and add their rows (those not finished by their first token)."""
        rows = [_Row(j) for j in jobs]
        width = max(len(r.prompt) for r in rows)
        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else 0
        ids = torch.tensor([[pad] * (width - len(r.prompt)) + r.prompt for r in rows], device=self.device)
        mask = torch.tensor([[0] * (width - len(r.prompt)) + [1] * len(r.prompt) for r in rows],
                            device=self.device)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        temps = torch.tensor([j.temperature for j in jobs], device=self.device, dtype=torch.float32)
        with self.autocast():
            res = self.pool.model(input_ids=ids, attention_mask=mask, position_ids=pos,
                                  use_cache=True, logits_to_keep=1, **self._names(rows))
        cache = res.past_key_values if getattr(res, "cache", None) is None else res.cache
        token, next_pos = _pick(res.logits[:, -1].float(), temps, self.gen), pos[:, -1:] + 1
        keep = []
        for slot, (row, t) in enumerate(zip(rows, token.tolist(), strict=True)):
            row.add(t, self.tok)  # its first token, from the prefill
            if row.finish is None:
                keep.append(slot)
        if not keep:
            return
        if len(keep) < len(rows):
            sel = torch.tensor(keep, device=self.device)
            cache.batch_select_indices(sel)
            mask, next_pos, token, temps = mask[sel], next_pos[sel], token[sel], temps[sel]
            rows = [rows[s] for s in keep]
        self._merge(rows, cache, mask, next_pos, token, temps)

    @torch.inference_mode()
    def step(self) -> None:
        mask = torch.cat([self.mask, torch.ones(self.alive, 1, dtype=self.mask.dtype,
                                                device=self.device)], 1)
        with self.autocast():
            res = self.pool.model(input_ids=self.token[:, None], attention_mask=mask,
                                  position_ids=self.next_pos, cache=self.cache, use_cache=True,
                                  **self._names(self.rows))
        self.mask, self.next_pos = mask, self.next_pos + 1
        self._advance(_pick(res.logits[:, -1].float(), self.temps, self.gen))

    def _advance(self, token: torch.Tensor) -> None:
        """Each row takes its token; finished rows leave the batch."""
        keep = []
        for slot, (row, t) in enumerate(zip(self.rows, token.tolist(), strict=True)):
            row.add(t, self.tok)
            if row.finish is None:
                keep.append(slot)
        self.token = token
        if len(keep) == len(self.rows):
            return
        self.rows = [self.rows[s] for s in keep]
        if not keep:
            self.cache = None
            return
        sel = torch.tensor(keep, device=self.device)
        self.cache.batch_select_indices(sel)
        self.mask, self.next_pos, self.token, self.temps = (
            self.mask[sel], self.next_pos[sel], self.token[sel], self.temps[sel])

    def _merge(self, rows: list[_Row], cache: Any, mask: torch.Tensor, next_pos: torch.Tensor,
               token: torch.Tensor, temps: torch.Tensor) -> None:
        """Append a prefilled group to the running batch (or start it)."""
        if self.cache is not None:
            width = max(self.mask.shape[1], mask.shape[1])
            for mine, theirs in zip(self.cache.layers, cache.layers, strict=True):
                mine.keys = torch.cat([_left_pad(mine.keys, width), _left_pad(theirs.keys, width)])
                mine.values = torch.cat([_left_pad(mine.values, width),
                                         _left_pad(theirs.values, width)])
            cache, rows = self.cache, [*self.rows, *rows]
            mask = torch.cat([_left_pad(self.mask, width), _left_pad(mask, width)])
            next_pos, token = torch.cat([self.next_pos, next_pos]), torch.cat([self.token, token])
            temps = torch.cat([self.temps, temps])
        self.rows, self.cache, self.mask, self.next_pos = rows, cache, mask, next_pos
        self.token, self.temps = token, temps

    def _names(self, rows: list[_Row]) -> dict[str, Any]:
        names = self.pool.row_names([r.job.digest for r in rows])
        return {"adapter_names": names} if names is not None else {}


def _left_pad(tensor: torch.Tensor, width: int) -> torch.Tensor:
    """Zeros before the sequence axis (dim 2 of a cache tensor, dim 1 of a mask)."""
    axis = 2 if tensor.dim() == 4 else 1
    missing = width - tensor.shape[axis]
    if missing == 0:
        return tensor
    shape = list(tensor.shape)
    shape[axis] = missing
    return torch.cat([torch.zeros(shape, dtype=tensor.dtype, device=tensor.device), tensor], axis)


def _pick(logits: torch.Tensor, temps: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Greedy for rows at temperature 0, else a draw from the tempered softmax."""
    greedy = logits.argmax(-1)
    if not bool((temps > 0).any()):
        return greedy
    scaled = logits / temps.clamp(min=1e-5)[:, None]
    drawn = torch.multinomial(torch.softmax(scaled, dim=-1), 1, generator=gen)[:, 0]
    return torch.where(temps > 0, drawn, greedy)
