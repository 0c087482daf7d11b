"""The engine port: every model call of the product goes through one of these.

- online (``generate``): one answer to a conversation, batched with whatever else is
  running (continuous batching, an adapter per row), streamed through ``on_delta``;
- offline (``sample``): k answers per prompt, seeded and reproducible, for the harness,
  the gate's rollouts and probe sets, the demo;
- ``represent``: the base model's representation of each text (the learned router's
  features);
- ``warm`` loads what a target needs and answers one token, so the first client does not
  wait for it; ``readiness`` says whether the engine can serve now.

``EmbeddedEngine`` (``inference.embedded.engine``) runs PEFT in this process; ``VllmEngine``
(``inference.vllm``) forwards to a vLLM server.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from inference.types import Delta, GenStats, Readiness, Request, Result, Sample, SampleJob, Target
from kernel.errors import Unavailable


class EngineUnavailable(Unavailable):
    """The engine did not generate (unreachable, timed out, not loaded)."""

    code = "backend_unavailable"


class Engine(Protocol):
    name: str
    # Whether ``generate`` enforces ``Decoding.grammar`` and reports ``Decoding.logprobs``
    # (a caller refuses such a request up front where it does not).
    constrains: bool

    def generate(self, request: Request, on_delta: Delta | None = None) -> Result:
        """The next assistant message of ``request.messages`` by ``request.target``; an
        engine that knows the stop rule ends there (else the caller cuts the text there)."""

    def sample(self, job: SampleJob, stats: GenStats | None = None) -> list[Sample]:
        """``job.k`` answers per prompt, in prompt order (a prompt's samples together)."""

    def represent(self, target: Target, texts: Sequence[str]) -> Any:
        """One row per text: the last hidden state of ``target``'s base (its adapter is
        not used) averaged over the text's tokens."""

    def warm(self, target: Target) -> None:
        """Load what ``target`` needs now."""

    def readiness(self) -> Readiness:
        """Whether the engine can serve (its model loaded, its server reachable)."""

    def liveness(self) -> str | None:
        """None while the engine can answer; else, in a few words, why not (``/healthz``)."""
