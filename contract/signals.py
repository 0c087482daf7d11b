"""What the user did next, read from the log: signals a rubric can judge an answer by.
Pure and deterministic: no model is called, so every worker and every replay derives the
same values from the same events.

For each answered turn, its *next* user message (the following turn in the subject, or,
for a turn subject, the ``turn.user`` that closed it) says how the answer landed:

- **regenerated**: the user sent the same message again (equal after folding case and
  whitespace): they asked for another answer to the same turn, as a "regenerate" button
  does when a client resends the conversation without the answer;
- **rephrased**: the user asked the same thing in other words: not equal, but the
  similarity of the two messages is at least ``REPHRASE_AT`` (below);
- **contradicted**: the user said the answer was wrong (a phrase of ``DISPUTES``: "that's
  wrong", "doesn't work", "not what I asked", … at the start of the message or as a
  whole clause; a small English lexicon, listed here, so a rubric author can see exactly
  what counts).

**Similarity** is the Jaccard index of the two messages' content words: lower-cased runs
of letters and digits, less the common English function words of ``STOPWORDS``
(``|A ∩ B| / |A ∪ B|``, 0 to 1; when a message has no content word its words are used as
they are). "How do I sort a list in Python?" and "how to sort a python list" share all of
{sort, list, python}: 1.0; "How do I sort it in reverse?" after the first shares {sort}
of {sort, list, python, reverse}: 0.25, a follow-up, not a repeat. It is a plain measure,
chosen so anyone can recompute it; ``REPHRASE_AT`` 0.5 keeps follow-ups on the same topic
out. Tool errors and a user's rating or correction (``POST /v1/feedback``) are read from
the subject's own events (contract/inputs.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from contract.input_caps import MAX_ITEMS, Caps
from contract.input_shapes import ReactionInput, SignalsInput
from events.model import RecordedEvent

REPHRASE_AT = 0.5
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_FUNCTION_WORDS = (
    "a an the and or but if then so of to in on at by for with from into about as is are was "
    "were be been being do does did done have has had i me my you your we our it its this that "
    "these those there here what which who whom how why when where can could would should will "
    "shall may might must please just again also not no yes any some all")
STOPWORDS = frozenset(_FUNCTION_WORDS.split(" "))
# Phrases by which a next message disputes the answer (matched on word boundaries, after
# folding case and apostrophes: "that’s" reads as "that's").
DISPUTES = (
    "that's wrong", "that is wrong", "this is wrong", "it's wrong", "you're wrong", "you are wrong",
    "wrong answer", "incorrect", "not correct", "not right", "that's not right", "that's not true",
    "that is not true", "not true", "doesn't work", "does not work", "didn't work", "did not work",
    "not working", "still broken", "still fails", "still doesn't", "not what i asked",
    "not what i meant", "that's not what", "you misunderstood", "makes no sense", "nonsense",
)
_DISPUTE = re.compile(r"^(no|nope|wrong)\b(?![ ,]+(problem|worries|thanks|need))|\b("
                      + "|".join(re.escape(p) for p in DISPUTES) + r")\b")


@dataclass(frozen=True)
class Reaction:
    """How the user answered one turn; all False (and similarity None) when they did not."""

    next_user_text: str | None = None
    similarity: float | None = None
    regenerated: bool = False
    rephrased: bool = False
    contradicted: bool = False


def reaction(question: str, answered: bool, next_user_text: str | None) -> Reaction:
    """What the user's next message says of the answer to ``question``."""
    if next_user_text is None or not answered:
        return Reaction(next_user_text)
    same = _fold(question) == _fold(next_user_text)
    similarity = 1.0 if same else similarity_of(question, next_user_text)
    return Reaction(next_user_text, similarity, same, not same and similarity >= REPHRASE_AT,
                    disputes(next_user_text))


def similarity_of(a: str, b: str) -> float:
    """The Jaccard index of the content words of ``a`` and ``b`` (see the module's docstring)."""
    words_a, words_b = _content(a), _content(b)
    union = words_a | words_b
    return len(words_a & words_b) / len(union) if union else 1.0


def disputes(text: str) -> bool:
    return _DISPUTE.search(_fold(text).replace("\u2019", "'")) is not None


def _fold(text: str) -> str:
    return " ".join(text.lower().split())


def _content(text: str) -> frozenset[str]:
    words = _WORD.findall(text.lower()[:20_000])
    content = frozenset(w for w in words if w not in STOPWORDS and (len(w) > 1 or w.isdigit()))
    return content or frozenset(words)


def reaction_json(reacted: Reaction, caps: Caps) -> ReactionInput:
    following = reacted.next_user_text
    return {"next_user_text": caps.text(following) if following is not None else None,
            "next_similarity": reacted.similarity, "regenerated": reacted.regenerated,
            "rephrased": reacted.rephrased, "contradicted": reacted.contradicted}


def signals_json(reactions: list[Reaction], given: list[RecordedEvent],
             results: dict[str, dict[str, Any]], caps: Caps) -> SignalsInput:
    """What the user did next, over the subject's answered turns (contract/signals.py)."""
    corrections = [caps.text(e.payload["correction"]) for e in given
                   if isinstance(e.payload.get("correction"), str)]
    last = reactions[-1] if reactions else Reaction()
    return {
        "followed_up": sum(r.similarity is not None for r in reactions),
        "regenerated": sum(r.regenerated for r in reactions),
        "rephrased": sum(r.rephrased for r in reactions),
        "contradicted": sum(r.contradicted for r in reactions),
        "corrected": len(corrections),
        "corrections": corrections[:MAX_ITEMS],
        "tool_errors": sum(r.get("ok") is False for r in results.values()),
        "last": reaction_json(last, caps),
    }
