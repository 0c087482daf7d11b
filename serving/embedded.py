"""The embedded backend: the batcher's PEFT pools in this process (CPU, or CUDA in bf16)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from serving.batcher import Batcher, Delta, GenJob, GenResult
from serving.choice import Choice


class EmbeddedBackend:
    name = "embedded"

    def __init__(self, open_dir: Callable[[str], Path], device: str | None, precision: str,
                 max_adapters: int, window_s: float, max_rows: int, timeout_s: float) -> None:
        self.batcher = Batcher(open_dir, device, precision, max_adapters, window_s, max_rows)
        self.timeout_s = timeout_s

    def generate(self, choice: Choice, messages: list[dict[str, str]], max_new_tokens: int,
                 temperature: float, seed: int | None, stops: list[str],
                 on_delta: Delta | None) -> GenResult:
        job = GenJob(choice.base, choice.digest, messages, max_new_tokens, temperature, seed,
                     stops, on_delta)
        return self.batcher.submit(job).result(timeout=self.timeout_s)
