"""A running mixed-adapter batch (``inference.embedded.batcher`` explains the batching):
rows join between steps and leave when they end, so a request that arrives while others
decode starts at the next step instead of waiting for the whole batch, and an answer goes
back as soon as its own row ends.

A joining group is prefilled on its own, then its KV cache is appended to the running
one, both left-padded to one length: padded positions are masked out and each row keeps
its own position ids, so a row's numbers do not depend on who shares its batch. A row's
adapter is pinned in the pool while the row runs (no offline load can evict it).
"""

from __future__ import annotations

import time
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any

import torch

from inference.embedded.pool import BASE_ROW, MIXED, ModelPool
from inference.grammar import GrammarRule, Logprobs
from inference.stops import STOPS
from inference.types import Delta, LogitsRule, Request, Result

REPLACEMENT = "\ufffd"  # what decoding shows for an incomplete multi-byte character


@dataclass
class GenJob:
    """One online request in the batcher."""

    request: Request
    on_delta: Delta | None = None  # streamed text, in order
    future: Future[Result] = field(default_factory=Future)
    prompt: list[int] = field(default_factory=list)  # token ids, set by the batcher

    @property
    def digest(self) -> str | None:
        return self.request.target.digest

    @property
    def max_new_tokens(self) -> int:
        return self.request.max_new_tokens

    def fail(self, exc: BaseException) -> None:
        """Answer with ``exc`` unless already answered or given up on (cancelled)."""
        try:
            if not self.future.done():
                self.future.set_exception(exc)
        except InvalidStateError:
            pass  # cancelled by its caller in between: nobody waits for it

    def settle(self, result: Result) -> None:
        try:
            if not self.future.done():
                self.future.set_result(result)
        except InvalidStateError:
            pass


class _Row:
    def __init__(self, job: GenJob, grammar: LogitsRule | None = None,
                 logprobs: Logprobs | None = None) -> None:
        decoding = job.request.decoding
        self.job, self.prompt, self.stops = job, job.prompt, decoding.stops
        self.rules = (*decoding.rules, *([grammar] if grammar is not None else []))
        self.logprobs = logprobs
        self.tokens: list[int] = []
        self.sent = 0  # characters already streamed
        self.text = ""
        self.finish: str | None = None
        self.eos = 0  # the end-of-sequence token, generated (it counts) but not text
        self.hold = max((len(s) for s in self.stops), default=1) - 1
        self.rule = STOPS.get(decoding.stop_rule)
        self.started = time.perf_counter()
        self.pinned = False  # its adapter held in the pool while it runs
        # Stop strings, a stop rule and a stream read the text as it grows; without them it
        # is decoded once, at the end (a decode of every row at every step is most of the
        # step's Python on a small model).
        self.reads_text = bool(self.stops) or self.rule is not None or job.on_delta is not None

    def add(self, token: int, tok: Any) -> None:
        if self.job.future.done():  # its caller gave up, or its stream failed: it leaves
            self.finish = self.finish or "gone"
            return
        self.tokens.append(token)
        if token == tok.eos_token_id:
            self.tokens.pop()
            self.finish, self.eos = "stop", 1
        elif self.logprobs is not None:
            self.logprobs.took(token)
        if not self.reads_text and self.finish is None:
            if len(self.tokens) + self.eos < self.job.max_new_tokens:
                return
            self.finish = "length"
        self.text = str(tok.decode(self.tokens, skip_special_tokens=True))
        cut = min((i for i in (self.text.find(s) for s in self.stops) if i >= 0), default=-1)
        end = self.rule(self.text) if cut < 0 and self.rule is not None else None
        if cut >= 0:
            self.text, self.finish = self.text[:cut], "stop"
        elif end is not None:
            self.text, self.finish = self.text[:end], "stop"
        elif self.finish is None and len(self.tokens) + self.eos >= self.job.max_new_tokens:
            self.finish = "length"
        self._stream()
        if self.finish is not None:
            self.job.settle(Result(
                self.text, len(self.prompt), len(self.tokens) + self.eos,
                "length" if self.finish == "length" else "stop",
                time.perf_counter() - self.started,
                self.logprobs.result() if self.logprobs is not None else None))

    def _stream(self) -> None:
        if self.job.on_delta is None:
            return
        upto = len(self.text) if self.finish else max(self.sent, len(self.text) - self.hold)
        while not self.finish and upto > self.sent and self.text[upto - 1] == REPLACEMENT:
            upto -= 1
        if upto > self.sent:
            try:
                self.job.on_delta(self.text[self.sent:upto])
            except Exception as exc:  # noqa: BLE001 (a receiver that fails ends its own row only)
                self.job.fail(exc)
                self.finish = "gone"
                return
            self.sent = upto


class Decoding:
    """The rows decoding now, their cache, attention masks, positions and next tokens."""

    def __init__(self, pool: ModelPool, seed: int) -> None:
        self.pool, self.tok, self.device = pool, pool.tokenizer, pool.device
        self.gen = torch.Generator(device=pool.device).manual_seed(seed)
        self.rows: list[_Row] = []  # alive, in batch order
        self.cache: Any = None
        self.mask = self.next_pos = self.token = self.temps = torch.empty(0)

    @property
    def alive(self) -> int:
        return len(self.rows)

    def close(self) -> None:
        """The batch is over (ended, or raised): its rows' adapters are free to go."""
        self._leave(self.rows)
        self.rows, self.cache = [], None

    def _forward(self, rows: list[_Row], **inputs: Any) -> Any:
        """One forward pass of the batch, each row with its adapter: the bare base alone
        when no row has one, else each row's slot of the stacked adapters
        (``inference.embedded.rows``), else PEFT's per-row names."""
        pool = self.pool
        with pool.lock, pool.autocast():
            names = pool.row_names([r.job.digest for r in rows])
            if names is None or all(n == BASE_ROW for n in names):
                pool.activate(None)
                return pool.model(**inputs)
            pool.activate(MIXED)
            plan = pool.rows.plan_for([None if n == BASE_ROW else n for n in names], self.device)
            if plan is None:
                return pool.model(**inputs, adapter_names=names)
            pool.rows.plan = plan
            try:
                return pool.model(**inputs)
            finally:
                pool.rows.plan = None

    @torch.inference_mode()
    def join(self, jobs: list[GenJob]) -> None:
        """Prefill ``jobs`` and add their rows (those not finished by their first token)."""
        rows = [row for row in map(self._row, jobs) if row is not None]
        jobs = [row.job for row in rows]
        if not rows:
            return
        self.pool.pin([j.request.target.adapter for j in jobs if j.request.target.adapter])
        for row in rows:
            row.pinned = row.job.digest is not None
        try:
            self._prefill(rows)
        except BaseException:
            self._leave(rows)
            raise

    def _prefill(self, rows: list[_Row]) -> None:
        width = max(len(r.prompt) for r in rows)
        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else 0
        ids = torch.tensor([[pad] * (width - len(r.prompt)) + r.prompt for r in rows], device=self.device)
        mask = torch.tensor([[0] * (width - len(r.prompt)) + [1] * len(r.prompt) for r in rows],
                            device=self.device)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        temps = torch.tensor([r.job.request.decoding.temperature for r in rows], device=self.device,
                             dtype=torch.float32)
        res = self._forward(rows, input_ids=ids, attention_mask=mask, position_ids=pos,
                            use_cache=True, logits_to_keep=1)
        cache = res.past_key_values if getattr(res, "cache", None) is None else res.cache
        token = _pick(self._ruled(rows, res.logits[:, -1].float()), temps, self.gen)
        next_pos = pos[:, -1:] + 1
        keep = []
        for slot, (row, t) in enumerate(zip(rows, token.tolist(), strict=True)):
            row.add(t, self.tok)  # its first token, from the prefill
            if row.finish is None:
                keep.append(slot)
        self._leave([r for r in rows if r.finish is not None])
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
        res = self._forward(self.rows, input_ids=self.token[:, None], attention_mask=mask,
                            position_ids=self.next_pos, cache=self.cache, use_cache=True)
        self.mask, self.next_pos = mask, self.next_pos + 1
        self._advance(_pick(self._ruled(self.rows, res.logits[:, -1].float()), self.temps, self.gen))

    def _row(self, job: GenJob) -> _Row | None:
        """The job's row, its grammar bound to this pool's tokenizer (``inference.grammar``);
        None, and the job failed, when its grammar cannot be built."""
        decoding = job.request.decoding
        try:
            grammar = (GrammarRule(self.pool.grammar_tokenizer, decoding.grammar.text)
                       if decoding.grammar is not None else None)
        except Exception as exc:  # noqa: BLE001 (this request's grammar: it fails alone)
            job.fail(exc)
            return None
        logprobs = (Logprobs(decoding.logprobs, self.pool.grammar_tokenizer.decode_bytes)
                    if decoding.logprobs is not None else None)
        return _Row(job, grammar, logprobs)

    def _ruled(self, rows: list[_Row], logits: torch.Tensor) -> torch.Tensor:
        """Each row's logits after its request's rules (constrained decoding); a rule that
        raises fails its own request, and that row leaves at its next token."""
        for i, row in enumerate(rows):
            if row.logprobs is not None:
                row.logprobs.see(logits[i])
            try:
                for rule in row.rules:
                    logits[i] = rule(row.tokens, logits[i])
            except Exception as exc:  # noqa: BLE001 (one request's rule stops no other row)
                row.job.fail(exc)
        return logits

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
        self._leave([r for r in self.rows if r.finish is not None])
        self.rows = [self.rows[s] for s in keep]
        if not keep:
            self.cache = None
            return
        sel = torch.tensor(keep, device=self.device)
        self.cache.batch_select_indices(sel)
        self.mask, self.next_pos, self.token, self.temps = (
            self.mask[sel], self.next_pos[sel], self.token[sel], self.temps[sel])

    def _leave(self, rows: list[_Row]) -> None:
        """Rows that are done: their adapters may be evicted again."""
        gone = [r for r in rows if r.pinned]
        for row in gone:
            row.pinned = False
        self.pool.unpin([str(r.job.digest) for r in gone])

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
