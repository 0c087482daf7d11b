"""A request's grammar and log-probabilities in the embedded engine, row by row.

``Decoding.grammar`` becomes a ``LogitsRule`` of its row (``GrammarRule``): an llguidance
matcher over the pool's tokenizer that takes each token the row generated and, at every
step, leaves only the tokens the grammar allows next (end of sequence once the text is
complete). So the answer is, by construction, a text the grammar takes, whatever the
adapter would rather say; the row ends when the grammar allows nothing but the end.
``Decoding.logprobs`` keeps, for each generated token, its log-probability under the
model's raw distribution (before the grammar's mask and the temperature, as vLLM reports
by default) and the ``k`` likeliest tokens of that step (``Logprobs``).

A matcher that fails (a token it did not allow, a grammar past llguidance's limits) fails
its own request only (``GrammarFailed``, a 400 naming ``response_format``): the gateway
checked the grammar before, so this is a bound reached while decoding, not a bad request
that got through.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import torch
from llguidance import LLMatcher, LLTokenizer

from inference.types import TokenLogprob
from kernel.errors import Invalid

log = logging.getLogger(__name__)
TokenBytes = Callable[[list[int]], bytes]


class GrammarFailed(Invalid):
    field = "response_format"


def grammar_tokenizer(hf_tokenizer: Any) -> LLTokenizer:
    """The tokenizer as llguidance reads it (about a second to build: the pool keeps it)."""
    from llguidance.hf import from_tokenizer

    return from_tokenizer(hf_tokenizer)


class GrammarRule:
    """Tokens the grammar does not allow next get no probability."""

    def __init__(self, tokenizer: LLTokenizer, grammar: str) -> None:
        self.matcher = LLMatcher(tokenizer, grammar)
        self._check()
        self.fed = 0

    def __call__(self, generated: Sequence[int], logits: torch.Tensor) -> torch.Tensor:
        if len(generated) > self.fed:
            self.matcher.consume_tokens(list(generated[self.fed:]))
            self.fed = len(generated)
            self._check()
        allowed = torch.frombuffer(bytearray(self.matcher.compute_logit_bias()), dtype=torch.uint8)
        keep = torch.zeros(logits.shape[-1], dtype=torch.bool)
        size = min(len(allowed), len(keep))  # a model's vocabulary may be padded past the tokenizer's
        keep[:size] = allowed[:size] > 0
        return logits.masked_fill(~keep.to(logits.device), float("-inf"))

    def _check(self) -> None:
        if self.matcher.is_error():
            raise GrammarFailed(f"the decoder could not go on under the answer's grammar: "
                                f"{self.matcher.get_error()[:300]}")


class Logprobs:
    """Each generated token's log-probability, and the ``k`` likeliest at its step."""

    def __init__(self, k: int, token_bytes: TokenBytes) -> None:
        self.k, self.token_bytes = k, token_bytes
        self.step: torch.Tensor | None = None
        self.taken: list[TokenLogprob] = []

    def see(self, logits: torch.Tensor) -> None:
        """The raw logits of the step about to pick (before any rule changes them)."""
        self.step = torch.log_softmax(logits.float(), -1).cpu()

    def took(self, token: int) -> None:
        if self.step is None:
            return
        top = torch.topk(self.step, self.k) if self.k else None
        alternatives = () if top is None else tuple(
            self._entry(int(t), float(v)) for v, t in zip(top.values, top.indices, strict=True))
        text, raw, logprob = self._entry(token, float(self.step[token]))
        self.taken.append(TokenLogprob(text, raw, logprob, alternatives))
        self.step = None

    def _entry(self, token: int, logprob: float) -> tuple[str, tuple[int, ...], float]:
        raw = self.token_bytes([token])
        return raw.decode("utf-8", "replace"), tuple(raw), logprob

    def result(self) -> tuple[TokenLogprob, ...]:
        return tuple(self.taken)
