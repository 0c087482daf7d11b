"""A row's grammar leaves only the tokens it allows next; its log-probabilities are the
raw distribution's, with the likeliest tokens of each step."""

from __future__ import annotations

import math

import pytest
from llguidance import LLMatcher, LLTokenizer, TokenizerWrapper

from inference.grammar import GrammarFailed, GrammarRule, Logprobs

torch = pytest.importorskip("torch")
EOS = 256


class Bytes:
    eos_token_id, bos_token_id = EOS, None
    tokens = [bytes([b]) for b in range(256)] + [b"<eos>"]
    special_token_ids = [EOS]

    def __call__(self, text: bytes) -> list[int]:
        return list(text)


TOKENIZER = LLTokenizer(TokenizerWrapper(Bytes()))


def test_the_rule_masks_what_the_grammar_does_not_allow_and_ends_the_answer() -> None:
    rule = GrammarRule(TOKENIZER, LLMatcher.grammar_from_regex("(yes|no)"))
    logits = torch.zeros(300)  # a model's vocabulary padded past the tokenizer's
    first = rule([], logits.clone())
    assert set(torch.nonzero(first > float("-inf")).flatten().tolist()) == {ord("y"), ord("n")}
    after = rule([ord("n"), ord("o")], logits.clone())  # the row took "no": only the end is left
    assert torch.nonzero(after > float("-inf")).flatten().tolist() == [EOS]
    with pytest.raises(GrammarFailed):  # a token it never allowed: this request fails
        GrammarRule(TOKENIZER, LLMatcher.grammar_from_regex("(yes|no)"))([ord("x")], logits.clone())


def test_logprobs_are_the_raw_distributions_with_the_likeliest() -> None:
    kept = Logprobs(2, lambda ids: bytes(ids))
    logits = torch.tensor([0.0, 2.0, 1.0] + [-9.0] * 254)
    kept.see(logits)
    kept.took(2)  # not the likeliest: a grammar or a draw may pick another
    [token] = kept.result()
    expected = torch.log_softmax(logits, -1)
    assert token.bytes == (2,) and math.isclose(token.logprob, float(expected[2]), rel_tol=1e-6)
    assert [t[1] for t in token.top] == [(1,), (2,)]
