"""The embedded backend: the batcher's PEFT pools in this process (CPU, or CUDA in bf16)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

from serving.batcher import Batcher, Delta, GenJob, GenResult
from serving.choice import Choice
from serving.gateway import BackendFailed


class EmbeddedBackend:
    name = "embedded"

    def __init__(self, open_dir: Callable[[str], Path], device: str | None, precision: str,
                 max_adapters: int, window_s: float, max_rows: int, timeout_s: float) -> None:
        self.batcher = Batcher(open_dir, device, precision, max_adapters, window_s, max_rows)
        self.timeout_s = timeout_s

    def generate(self, choice: Choice, messages: list[dict[str, str]], max_new_tokens: int,
                 temperature: float, seed: int | None, stops: list[str],
                 on_delta: Delta | None, stop_after: str | None = None) -> GenResult:
        job = GenJob(choice.base, choice.digest, messages, max_new_tokens, temperature, seed,
                     stops, on_delta, stop_after=stop_after)
        try:
            return self.batcher.submit(job).result(timeout=self.timeout_s)
        except FutureTimeout:
            raise BackendFailed(f"no answer within {self.timeout_s:g} s (HCP_SERVING_TIMEOUT_S): "
                                "the model is busy") from None
