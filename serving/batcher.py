"""The embedded backend's decoding thread: concurrent requests decode in one batch,
whatever adapter each needs.

Requests wait up to ``window_s`` for others to join (one batch pays one forward pass per
step for all of them); a batch holds up to ``max_rows`` rows of one base model, each row
with its own adapter (PEFT's per-row ``adapter_names``, ``__base__`` for the bare base),
temperature, token limit and stop strings, the way LoRAX and S-LoRA batch adapters. A
row leaves the batch when it ends (end of sequence, a stop string, its limit), as in
``harness.decode``. Requests arriving while a batch runs form the next one. Streamed
text goes out as it is decoded, held back only where a stop string could still begin
or a multi-byte character is incomplete.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from kernel.errors import Invalid
from serving.choice import BaseRef
from serving.pool import AdapterPool

Delta = Callable[[str], None]


class PromptTooLong(Invalid):
    field = "messages"


@dataclass
class GenJob:
    base: BaseRef
    digest: str | None  # the adapter's artifact digest; None: the bare base
    messages: list[dict[str, str]]
    max_new_tokens: int
    temperature: float = 0.0
    seed: int | None = None
    stops: list[str] = field(default_factory=list)
    on_delta: Delta | None = None  # streamed text, in order
    future: Future[GenResult] = field(default_factory=Future)
    prompt: list[int] = field(default_factory=list)  # token ids, set by the batcher


@dataclass(frozen=True)
class GenResult:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish: str  # "stop" | "length"
    seconds: float


class Batcher:
    """Owns the pools (one per base model) and the thread that decodes with them."""

    def __init__(self, open_dir: Callable[[str], Path], device: str | None, precision: str,
                 max_adapters: int, window_s: float, max_rows: int) -> None:
        self.open_dir, self.device, self.precision = open_dir, device, precision
        self.max_adapters, self.window_s, self.max_rows = max_adapters, window_s, max_rows
        self.pools: dict[str, AdapterPool] = {}
        self.inbox: queue.Queue[GenJob] = queue.Queue()
        self.batches = 0  # decoded so far (tests and benches read it)
        self._thread = threading.Thread(target=self._loop, name="hcp-batcher", daemon=True)
        self._thread.start()

    def submit(self, job: GenJob) -> Future[GenResult]:
        self.inbox.put(job)
        return job.future

    def pool(self, base: BaseRef) -> AdapterPool:
        found = self.pools.get(base.weights_sha256)
        if found is None:
            found = self.pools[base.weights_sha256] = AdapterPool(
                base, self.device, self.precision, self.max_adapters)
        return found

    def _loop(self) -> None:
        while True:
            jobs = [self.inbox.get()]
            deadline = time.monotonic() + self.window_s
            while len(jobs) < self.max_rows:
                try:
                    jobs.append(self.inbox.get(timeout=max(0.0, deadline - time.monotonic())))
                except queue.Empty:
                    break
            by_base: dict[str, list[GenJob]] = {}
            for job in jobs:
                by_base.setdefault(job.base.weights_sha256, []).append(job)
            for group in by_base.values():
                self._run(group)

    def _run(self, jobs: list[GenJob]) -> None:
        from serving.decode import decode_batch

        try:
            pool = self.pool(jobs[0].base)
            keep = {j.digest for j in jobs if j.digest is not None}
            for digest in sorted(keep):
                pool.ensure(digest, self.open_dir, keep)
        except Exception as exc:  # noqa: BLE001 (each waiting request gets the error)
            for job in jobs:
                job.future.set_exception(exc)
            return
        jobs = [j for j in jobs if self._fits(pool, j)]
        if not jobs:
            return
        try:
            results = decode_batch(pool, jobs)
        except Exception as exc:  # noqa: BLE001
            for job in jobs:
                if not job.future.done():
                    job.future.set_exception(exc)
            return
        self.batches += 1
        for job, result in zip(jobs, results, strict=True):
            job.future.set_result(result)

    @staticmethod
    def _fits(pool: AdapterPool, job: GenJob) -> bool:
        """Refuse, alone, a job longer than the model's context: in the batch it would
        fail every other row with it."""
        from trainer.ml.prompts import prompt_ids

        job.prompt = prompt_ids(pool.tokenizer, "", job.messages)
        room = pool.context_length - len(job.prompt)
        if room >= job.max_new_tokens:
            return True
        job.future.set_exception(PromptTooLong(
            f"the conversation is {len(job.prompt)} tokens; with max_tokens {job.max_new_tokens} "
            f"it exceeds the model's context of {pool.context_length}"))
        return False

