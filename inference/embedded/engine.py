"""``EmbeddedEngine``: the engine port over PEFT in this process.

One ``ModelPool`` per base model, device and dtype, shared by everything this process
does with models: the gateway's online batches (``batcher``), the harness's and the
gate's offline sampling (``offline``, through the memo), the router's representation.
So one base model sits in memory, however many callers there are.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import replace
from functools import partial
from typing import Any

from inference.embedded.batcher import Batcher, BatcherStopped
from inference.embedded.pool import ModelPool, OpenDir
from inference.engine import EngineUnavailable
from inference.memo import AnswerMemo, through
from inference.stops import STOPS
from inference.types import (
    Delta,
    GenStats,
    Prompt,
    Readiness,
    Request,
    Result,
    Sample,
    SampleJob,
    Target,
)
from kernel.errors import DomainError


class EmbeddedEngine:
    name = "embedded"
    constrains = True  # a grammar and log-probabilities per row (inference.grammar)

    def __init__(self, open_dir: OpenDir, device: str | None = None, max_adapters: int = 16,
                 window_s: float = 0.005, max_rows: int = 32, timeout_s: float = 300.0,
                 memo: AnswerMemo | None = None, batch_memory_mb: int | None = 1024) -> None:
        self.open_dir, self._device = open_dir, device or None
        self.max_adapters, self.window_s, self.max_rows = max_adapters, window_s, max_rows
        self.timeout_s, self.memo = timeout_s, memo
        # What an offline batch may hold (its cache and prefill scores); None: no bound
        self.batch_memory = None if batch_memory_mb is None else batch_memory_mb << 20
        self.pools: dict[tuple[str, str, str], ModelPool] = {}
        self._lock = threading.Lock()
        self._batcher: Batcher | None = None
        self._answered = False  # an online answer went back: the engine can serve

    @property
    def device(self) -> Any:
        """This engine's device (torch is imported on first use, not when the engine is built:
        a process that serves no model never loads it)."""
        from trainer.ml.load import resolve_device

        return resolve_device(self._device)

    # --- pools ---------------------------------------------------------------------------

    def normal(self, target: Target) -> Target:
        """``target`` on this engine's device unless it names one."""
        return target if target.device else replace(target, device=str(self.device))

    def pool_key(self, target: Target) -> tuple[str, str, str]:
        """Which pool serves ``target``: its base's bytes, device and dtype ("auto" and
        "fp32" are one pool on a CPU)."""
        from trainer.ml.load import base_dtype, resolve_device

        device = resolve_device(target.device or self.device)
        return target.base.weights_sha256, str(device), str(base_dtype(device, target.precision))

    def pool(self, target: Target) -> ModelPool:
        from trainer.ml.load import resolve_device

        device = resolve_device(target.device or self.device)
        key = self.pool_key(target)
        with self._lock:  # one load per key, however many threads ask
            found = self.pools.get(key)
            if found is None:
                found = self.pools[key] = ModelPool(target.base, device, target.precision,
                                                    self.max_adapters, self.open_dir)
            return found

    # --- online --------------------------------------------------------------------------

    def submit(self, request: Request, on_delta: Delta | None = None) -> Future[Result]:
        """The answer, later: the request joins the running batch at its next step."""
        from inference.embedded.online import GenJob  # torch: loaded by the first answer

        return self._batch().submit(GenJob(replace(request, target=self.normal(request.target)),
                                           on_delta))

    def generate(self, request: Request, on_delta: Delta | None = None) -> Result:
        future = self.submit(request, on_delta)
        try:
            result = future.result(timeout=self.timeout_s)
        except BatcherStopped as exc:
            raise EngineUnavailable(f"the model cannot answer: {exc}") from None
        except FutureTimeout:
            future.cancel()  # its row leaves the batch: nobody reads the answer
            raise EngineUnavailable(f"no answer within {self.timeout_s:g} s "
                                    "(HCP_SERVING_TIMEOUT_S): the model is busy") from None
        except DomainError:
            raise  # this request's own fault (a conversation longer than the context): its 4xx
        except Exception as exc:
            # The batch this request decoded in failed (another request's input may be why):
            # a 503 to retry, naming the kind only (the text may quote others' input).
            raise EngineUnavailable(f"decoding failed ({type(exc).__name__}); retry") from exc
        self._answered = True
        return result

    def _batch(self) -> Batcher:
        with self._lock:
            if self._batcher is None:
                self._batcher = Batcher(self.pool, self.pool_key, self.window_s, self.max_rows,
                                        stall_s=self.timeout_s)
            return self._batcher

    def liveness(self) -> str | None:
        """The decoding thread's, once it runs (None: it runs, or has not started)."""
        return self._batcher.liveness() if self._batcher is not None else None

    @property
    def batcher(self) -> Batcher:
        """The online decoding thread (started on first use)."""
        return self._batch()

    @property
    def batches(self) -> int:
        return self._batcher.batches if self._batcher is not None else 0

    # --- offline -------------------------------------------------------------------------

    def sample(self, job: SampleJob, stats: GenStats | None = None) -> list[Sample]:
        target = self.normal(job.target)
        pool = self.pool(target)
        ids = [self._prompt_ids(pool, p, job) for p in job.prompts]

        def generate(prompts: list[list[int]]) -> list[Sample]:
            return self._sample(pool, target, job, prompts, stats)

        if self.memo is None or not ids:
            return generate(ids)
        return through(self.memo, self._fields(pool, target, job), ids, job.temperature > 0,
                       generate, stats)

    def _fields(self, pool: ModelPool, target: Target, job: SampleJob) -> dict[str, Any]:
        import torch

        return {"base": target.base.weights_sha256, "adapter": target.digest,
                "dtype": str(pool.dtype), "device": pool.device.type, "torch": torch.__version__,
                "max_new_tokens": job.max_new_tokens, "stop_rule": job.stop_rule, "k": job.k,
                "temperature": job.temperature, "seed": job.seed if job.temperature > 0 else None,
                "batch_rows": job.batch_rows if job.temperature > 0 else None,
                # a draw depends on its batch, and the memory bound cuts batches
                "batch_memory": self.batch_memory if job.temperature > 0 else None}

    def _sample(self, pool: ModelPool, target: Target, job: SampleJob, ids: list[list[int]],
                stats: GenStats | None) -> list[Sample]:
        from inference.embedded.offline import sample

        adapters = [target.adapter] if target.adapter is not None else []
        with pool.holding(adapters) as names, pool.autocast():
            forward = partial(_forward, pool, names.get(target.digest or ""))
            return sample(forward, pool.tokenizer, ids, k=job.k, temperature=job.temperature,
                          max_new_tokens=job.max_new_tokens, batch_size=job.batch_rows,
                          seed=job.seed, stop=STOPS[job.stop_rule], stats=stats,
                          device=pool.device,
                          memory=None if self.batch_memory is None else pool.memory(self.batch_memory))

    @staticmethod
    def _prompt_ids(pool: ModelPool, prompt: Prompt, job: SampleJob) -> list[int]:
        """The prompt as the model sees it; with ``max_prompt_tokens``, its end (as in
        training: the end is what is answered), within the context less the new tokens."""
        from trainer.ml.prompts import prompt_ids

        ids = prompt_ids(pool.tokenizer, prompt.text, prompt.messages)
        if job.max_prompt_tokens is None:
            return ids
        room = max(1, min(job.max_prompt_tokens, pool.context_length - job.max_new_tokens))
        return ids[-room:]

    # --- the rest of the port -------------------------------------------------------------

    def represent(self, target: Target, texts: Sequence[str]) -> Any:
        from inference.embedded.represent import represent

        pool = self.pool(self.normal(target))
        return represent(partial(_forward, pool, None), pool.tokenizer, texts, pool.device)

    def warm(self, target: Target) -> None:
        """The base and adapter loaded and one token decoded, online."""
        self.generate(Request(target, ({"role": "user", "content": "hi"},), 1))

    def readiness(self) -> Readiness:
        loaded = tuple(sorted({p.base.name for p in self.pools.values()}))
        reason = self.liveness()
        if reason is not None:
            return Readiness(False, reason, loaded)
        if not self._answered:
            return Readiness(False, "no answer yet: the model loads on the first request", loaded)
        return Readiness(True, "answering", loaded)

def _forward(pool: ModelPool, adapter: str | None, **inputs: Any) -> Any:
    """One forward pass with ``adapter`` active (None: the bare base), under the pool's lock."""
    with pool.lock:
        pool.activate(adapter)
        return pool.model(**inputs)
