"""The embedded engine's online decoding thread: concurrent requests decode in one batch,
whatever adapter each needs.

A batch holds up to ``max_rows`` rows of one base model, each row with its own adapter
(PEFT's per-row ``adapter_names``, ``__base__`` for the bare base), temperature, token
limit and stop strings, the way LoRAX and S-LoRA batch adapters. The first requests wait
up to ``window_s`` for others to start with them; after that a request joins the running
batch at its next step (``inference.embedded.online``) when its adapter is loaded, else it
waits for the batch to end (and then no other joins, so it waits one batch at most). A row
leaves the batch, and its answer goes back, when it ends (end of sequence, a stop string
or stop rule, its limit). Streamed text goes out as it is decoded, held back only where a
stop string could still begin or a multi-byte character is incomplete.

One thread answers every tenant: whatever a group of requests raises goes to those
requests only and the thread goes on; a thread that stops anyway refuses at once
(``BatcherStopped``) and says so (``liveness``, shown by ``/healthz`` and ``/livez``).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from inference.embedded.pool import ModelPool
from inference.types import Result, Target
from kernel.errors import Invalid

if TYPE_CHECKING:  # decoding imports torch: loaded by the thread's first batch, not by a 404
    from inference.embedded.online import GenJob

log = logging.getLogger(__name__)
PoolFor = Callable[[Target], ModelPool]
KeyOf = Callable[[Target], Hashable]  # which pool serves a target (without loading it)


class PromptTooLong(Invalid):
    field = "messages"


class BatcherStopped(RuntimeError):
    """The decoding thread is not running: nothing submitted now would be answered."""


class Batcher:
    """The thread that decodes online requests with the engine's pools."""

    def __init__(self, pool_for: PoolFor, key_of: KeyOf, window_s: float, max_rows: int,
                 stall_s: float = 300.0) -> None:
        self.pool_for, self.key_of, self.window_s, self.max_rows = pool_for, key_of, window_s, max_rows
        self.stall_s = stall_s  # one step (a load, a prefill, a token) running longer is stuck
        self.inbox: queue.Queue[GenJob] = queue.Queue()
        self.pending: list[GenJob] = []  # taken from the inbox, for the next batch
        self.batches = 0  # decoded so far (tests and benches read it)
        self.failed_groups = 0  # groups whose decoding raised (their requests got the error)
        self.busy_since: float | None = None  # when the work in hand began; None: idle
        self._in_hand: list[GenJob] = []  # the group decoding now, joiners included
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name="hcp-batcher", daemon=True)
        self._thread.start()

    def submit(self, job: GenJob) -> Future[Result]:
        if self._stopped or not self._thread.is_alive():
            job.fail(BatcherStopped("the decoding thread has stopped"))
            return job.future
        self.inbox.put(job)
        return job.future

    def liveness(self) -> str | None:
        """None while the thread runs and its current step is younger than ``stall_s``;
        else why not (short: ``/healthz`` shows it without a key)."""
        if self._stopped or not self._thread.is_alive():
            return "decoding thread stopped"
        since = self.busy_since
        if since is not None and time.monotonic() - since > self.stall_s:
            return f"decoding step running for over {self.stall_s:g} s"
        return None

    def _loop(self) -> None:
        try:
            while True:
                for group in self._next_groups():
                    self._run_group(group)
        finally:  # only a BaseException gets here: whoever waits is told, nobody hangs
            self._stopped = True
            stopped = BatcherStopped("the decoding thread has stopped")
            for job in [*self._in_hand, *self.pending, *_drain(self.inbox)]:
                job.fail(stopped)

    def _next_groups(self) -> list[list[GenJob]]:
        """The next batch's jobs (waiting up to ``window_s`` for company), by pool."""
        jobs, self.pending = self.pending, []
        if not jobs:
            jobs = [self.inbox.get()]
        deadline = time.monotonic() + self.window_s
        while len(jobs) < self.max_rows:
            try:
                jobs.append(self.inbox.get(timeout=max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                break
        by_pool: dict[Hashable, list[GenJob]] = {}
        for job in jobs:
            if not job.future.done():  # a caller that gave up (cancelled) costs nothing
                by_pool.setdefault(self.key_of(job.request.target), []).append(job)
        return list(by_pool.values())

    def _run_group(self, jobs: list[GenJob]) -> None:
        """Decode one group; whatever it raises goes to its own requests, never further."""
        joined = self._in_hand = list(jobs)
        self.busy_since = time.monotonic()
        try:
            self._run(jobs, joined)
        except Exception as exc:  # noqa: BLE001 (each waiting request gets the error)
            self.failed_groups += 1
            log.exception("a decoding group failed; its %d requests get the error", len(joined))
            for job in joined:
                job.fail(exc)
        finally:
            self.busy_since = None

    def _run(self, jobs: list[GenJob], joined: list[GenJob]) -> None:
        pool = self.pool_for(jobs[0].request.target)
        for adapter in {j.request.target.adapter for j in jobs} - {None}:
            pool.ensure(adapter)  # type: ignore[arg-type]
        jobs = [j for j in jobs if self._fits(pool, j)]
        if not jobs:
            return
        from inference.embedded.online import Decoding

        decoding = Decoding(pool, jobs[0].request.decoding.seed or 0)
        self.batches += 1
        try:
            decoding.join(jobs)
            while decoding.alive:
                self.busy_since = time.monotonic()
                decoding.step()
                joiners = self._joiners(pool, jobs[0].request.target,
                                        self.max_rows - decoding.alive) if decoding.alive else []
                if joiners:
                    joined += joiners
                    decoding.join(joiners)
        finally:
            decoding.close()  # the rows' adapters may be evicted again

    def _joiners(self, pool: ModelPool, running: Target, room: int) -> list[GenJob]:
        """Requests that can join the running batch now: same pool, adapter loaded. Once
        one cannot, none joins until the batch ends, so it waits one batch at most."""
        found: list[GenJob] = []
        while len(found) < room and not self.pending:
            try:
                job = self.inbox.get_nowait()
            except queue.Empty:
                break
            if job.future.done():
                continue  # its caller gave up waiting
            if self.key_of(job.request.target) != self.key_of(running) or (
                    job.digest is not None and job.digest not in pool.loaded):
                self.pending.append(job)
            elif self._fits(pool, job):
                found.append(job)
        return found

    @staticmethod
    def _fits(pool: ModelPool, job: GenJob) -> bool:
        """Refuse, alone, a job longer than the model's context: in the batch it would
        fail every other row with it."""
        from trainer.ml.prompts import prompt_ids

        chars = sum(len(m.get("content") or "") for m in job.request.messages)
        if chars > pool.max_prompt_chars:  # refused before tokenising it: that costs seconds
            job.fail(PromptTooLong(
                f"the conversation is {chars} characters; the model's context of "
                f"{pool.context_length} tokens holds at most {pool.max_prompt_chars}"))
            return False
        try:
            job.prompt = prompt_ids(pool.tokenizer, "", job.request.messages)
        except Exception as exc:  # noqa: BLE001 (what this request brought fails it alone)
            job.fail(exc)
            return False
        room = pool.context_length - len(job.prompt)
        if room >= job.max_new_tokens:
            return True
        job.fail(PromptTooLong(
            f"the conversation is {len(job.prompt)} tokens; with max_tokens {job.max_new_tokens} "
            f"it exceeds the model's context of {pool.context_length}"))
        return False


def _drain(inbox: queue.Queue[GenJob]) -> list[GenJob]:
    found: list[GenJob] = []
    while True:
        try:
            found.append(inbox.get_nowait())
        except queue.Empty:
            return found
