"""The embedded backend's decoding thread: concurrent requests decode in one batch,
whatever adapter each needs.

A batch holds up to ``max_rows`` rows of one base model, each row with its own adapter
(PEFT's per-row ``adapter_names``, ``__base__`` for the bare base), temperature, token
limit and stop strings, the way LoRAX and S-LoRA batch adapters. The first requests wait
up to ``window_s`` for others to start with them; after that a request joins the running
batch at its next step (``serving.decode``) when its adapter is loaded, else it waits
for the batch to end (and then no other joins, so it waits one batch at most). A row
leaves the batch, and its answer goes back, when it ends (end of sequence, a stop string
or stop rule, its limit). Streamed text goes out as it is decoded, held back only where a stop string
could still begin or a multi-byte character is incomplete.
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
    stop_after: str | None = None  # a named stop rule (harness.stops): the row ends there
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
        self.pending: list[GenJob] = []  # taken from the inbox, for the next batch
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
            jobs, self.pending = self.pending, []
            if not jobs:
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
        from serving.decode import Decoding

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
        decoding, joined = Decoding(pool, jobs[0].seed or 0), list(jobs)
        self.batches += 1
        try:
            decoding.join(jobs)
            while decoding.alive:
                decoding.step()
                joiners = self._joiners(pool, self.max_rows - decoding.alive) if decoding.alive else []
                if joiners:
                    joined += joiners
                    decoding.join(joiners)
        except Exception as exc:  # noqa: BLE001
            for job in joined:
                if not job.future.done():
                    job.future.set_exception(exc)

    def _joiners(self, pool: AdapterPool, room: int) -> list[GenJob]:
        """Requests that can join the running batch now: same base, adapter loaded. Once
        one cannot, none joins until the batch ends, so it waits one batch at most."""
        found: list[GenJob] = []
        while len(found) < room and not self.pending:
            try:
                job = self.inbox.get_nowait()
            except queue.Empty:
                break
            if job.base.weights_sha256 != pool.base.weights_sha256 or (
                    job.digest is not None and job.digest not in pool.loaded):
                self.pending.append(job)
            elif self._fits(pool, job):
                found.append(job)
        return found

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

