"""What the engine is asked and what it answers. Pure.

A ``Target`` names bytes: a base model by its weights digest (the registry's) and, unless
the bare base answers, an adapter by its artifact digest. The engine loads an adapter's
bytes from its ``directory`` when one is given (a successor being gated, hashed by the
caller), else from the artifact store by digest (re-hashed on open), so what answers is
always what the digests say.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

Message = Mapping[str, str]  # {"role": ..., "content": ...}
Delta = Callable[[str], None]  # streamed text, in order
Finish = Literal["stop", "length"]


@dataclass(frozen=True)
class BaseModel:
    name: str
    path: str
    weights_sha256: str


@dataclass(frozen=True)
class Adapter:
    digest: str  # the artifact's sha256 (trainer.registry.artifacts.dir_sha256)
    directory: Path | None = None  # None: open it from the artifact store by digest


@dataclass(frozen=True)
class Target:
    base: BaseModel
    adapter: Adapter | None = None  # None: the bare base
    precision: str = "auto"  # of the base's weights (trainer.ml.load.base_dtype)
    device: str | None = None  # None: the engine's

    @property
    def digest(self) -> str | None:
        return self.adapter.digest if self.adapter is not None else None


class LogitsRule(Protocol):
    """A per-request rule on the next token (constrained decoding, a response format): the
    row's logits after the tokens it generated so far, changed (e.g. masked)."""

    def __call__(self, generated: Sequence[int], logits: Any) -> Any: ...


@dataclass(frozen=True)
class Grammar:
    """What the answer must be, enforced token by token: llguidance's grammar text
    (``serving.constrained`` builds it from a response format or a forced tool call). An
    engine bound to a tokenizer turns it into a rule on each step's logits
    (``inference.grammar``); ``kind`` says what it came from."""

    text: str
    kind: str = "grammar"  # json_object | json_schema | tool


@dataclass(frozen=True)
class Decoding:
    temperature: float = 0.0  # 0: greedy
    seed: int | None = None
    stops: tuple[str, ...] = ()  # stop strings: the answer ends before the first
    stop_rule: str | None = None  # a named stop rule (inference.stops.STOPS)
    rules: tuple[LogitsRule, ...] = ()  # applied to the row's logits, in order, each step
    grammar: Grammar | None = None  # the answer must be a text it takes (after ``rules``)
    logprobs: int | None = None  # None: none; k: each token's log-probability and its k likeliest


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token: its text and bytes, its log-probability under the model (the
    raw distribution, before a grammar's mask and the temperature, as vLLM reports by
    default) and the ``k`` likeliest tokens at that step."""

    token: str
    bytes: tuple[int, ...]
    logprob: float
    top: tuple[tuple[str, tuple[int, ...], float], ...] = ()


@dataclass(frozen=True)
class Request:
    """One online answer: the conversation's next assistant message."""

    target: Target
    messages: tuple[Message, ...]
    max_new_tokens: int
    decoding: Decoding = field(default_factory=Decoding)


@dataclass(frozen=True)
class Result:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish: Finish
    seconds: float
    logprobs: tuple[TokenLogprob, ...] | None = None  # when the request asked (Decoding.logprobs)


@dataclass(frozen=True)
class Prompt:
    """An offline prompt: ``messages`` rendered with the chat template when given, else
    ``text`` after a beginning-of-sequence token (trainer.ml.prompts.prompt_ids)."""

    text: str
    messages: tuple[Message, ...] | None = None


@dataclass(frozen=True)
class SampleJob:
    """k answers per prompt, offline (reproducible for a fixed seed, prompt list, batch
    size and thread count)."""

    target: Target
    prompts: tuple[Prompt, ...]
    max_new_tokens: int
    k: int = 1
    temperature: float = 0.0
    seed: int = 0
    stop_rule: str | None = None
    batch_rows: int = 64  # rows (prompts x k) decoded together
    max_prompt_tokens: int | None = None  # keep the end of longer prompts


@dataclass(frozen=True)
class Sample:
    prompt_index: int
    text: str  # cut where the stop rule said the answer ends
    new_tokens: int  # tokens generated for it (what it cost), end of sequence included
    stopped: bool  # end of sequence or stop rule, rather than max_new_tokens
    memo: str | None = None  # its key in the answer memo (None: no memo)
    reused: bool = False  # read from the memo, not generated now


@dataclass
class GenStats:
    seconds: float = 0.0
    new_tokens: int = 0  # tokens produced, up to and including the end of sequence
    computed_tokens: int = 0  # rows x steps: what the batches paid for
    reused: int = 0  # answers read from the memo instead of generated

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / self.seconds if self.seconds else 0.0


@dataclass(frozen=True)
class Readiness:
    ready: bool
    detail: str
    loaded: tuple[str, ...] = ()  # base models held, by name


def prompt_of(text: str, messages: Sequence[Message] | None) -> Prompt:
    return Prompt(text, tuple(messages) if messages else None)
