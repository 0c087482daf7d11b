"""Judge criteria: a judge model, pinned by digest, reads an answer and gives a verdict. Pure.

A contract declares its judges under ``[[evaluation.judges]]``: the model (its weights'
digest), the prompt (a template over the subject), how the answer is read (a number on a
scale, or one of some words), a seed and a token budget. The verdicts are computed
*before* the rubric, as inputs (``judge.<id>.score`` in CEL): CEL stays pure, and a
verdict is a fact recorded once in the log (``judge.verdict``), memoised by (tenant,
model digest, prompt hash, seed), so re-scoring history reads the same raw answer and
parses it the same way, byte for byte, whatever the judge would say today.

What is hashed (``prompt_hash``) is the request as the model sees it: the rendered
messages and the token budget. Decoding is greedy (temperature 0) with the seed, so
the same request to the same bytes gives the same answer; the seed is part of the key
so that an author who wants a second opinion asks for it explicitly.

Two modes. ``absolute`` (the default) reads one answer at a time. ``relative`` (as RULER
does) shows the judge every answer the subject holds to the same question (a
regeneration's answers side by side) and reads one number per answer, in order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from contract.sections_base import Digest, ItemId, Section
from kernel.canonical import canonical_sha256

PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")
# What a prompt may name: the subject's last question and answer, the whole
# conversation, and (relative mode) the numbered answers to the question.
PLACEHOLDERS = ("user_text", "assistant_text", "conversation", "specialist", "answers", "count")
RELATIVE_ONLY = ("answers", "count")
MAX_INSERT = 4000  # characters of one inserted text: a judge's context is finite
MAX_VERDICT = 4000  # characters of a raw verdict kept in the log
MAX_ANSWERS = 8  # answers one relative request compares
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


class Judge(Section):
    """One judge of a contract (``[[evaluation.judges]]``)."""

    id: ItemId
    model: Digest  # the judge model's weights digest: a registered base model, or an endpoint's
    prompt: Annotated[str, Field(min_length=1, max_length=8000)]
    system: Annotated[str, Field(max_length=8000)] | None = None
    parse: Literal["number", "choice"] = "number"
    scale: tuple[float, float] = (1.0, 10.0)  # number: [lo, hi], read as (x - lo) / (hi - lo)
    choices: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,32}$")],
                  Annotated[float, Field(ge=0.0, le=1.0)]] = {}
    seed: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    max_tokens: Annotated[int, Field(ge=1, le=512)] = 16
    mode: Literal["absolute", "relative"] = "absolute"
    # The score of a verdict that does not read; None (the default): such a verdict is an
    # evaluation error and the subject gets no score.
    unreadable: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    description: str = ""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("unreadable") is None:  # (added later: judges without it keep their hash)
            data.pop("unreadable", None)
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Judge:
        lo, hi = self.scale
        if not lo < hi:
            raise ValueError(f"scale [{lo}, {hi}]: the low end must be below the high end")
        if self.parse == "choice" and not self.choices:
            raise ValueError("parse = 'choice' needs choices (a word -> a score in [0, 1])")
        if self.parse == "choice" and self.mode == "relative":
            raise ValueError("a relative judge reads one number per answer: parse = 'number'")
        unknown = sorted(set(PLACEHOLDER.findall(self.prompt)) - set(PLACEHOLDERS))
        if unknown:
            raise ValueError(f"prompt names {unknown}; a prompt may name {list(PLACEHOLDERS)}")
        if self.mode == "absolute" and set(PLACEHOLDER.findall(self.prompt)) & set(RELATIVE_ONLY):
            raise ValueError("{{answers}} and {{count}} are for mode = 'relative'")
        return self


@dataclass(frozen=True)
class JudgeRequest:
    """What is asked of a judge model for one subject; ``prompt_hash`` names it."""

    judge_id: str
    model: str
    messages: tuple[tuple[str, str], ...]  # (role, content)
    max_tokens: int
    seed: int
    prompt_hash: str
    answers: int = 1  # relative: how many answers the verdict ranks

    def chat(self) -> list[dict[str, str]]:
        return [{"role": role, "content": content} for role, content in self.messages]


@dataclass(frozen=True)
class Verdict:
    """A judge's raw answer to a request, as the log holds it."""

    text: str
    event_id: str | None = None  # the judge.verdict event that recorded it


@dataclass(frozen=True)
class Reading:
    """A verdict read by the judge's parse rule: a score in [0, 1] (one per answer in
    relative mode), or why it could not be read."""

    scores: tuple[float, ...]
    value: float | None
    error: str | None = None

    @property
    def score(self) -> float | None:
        return self.scores[-1] if self.scores else None


def prompt_hash(messages: Sequence[tuple[str, str]], max_tokens: int) -> str:
    """sha256 of what the model is given: the messages and the token budget."""
    return canonical_sha256({"messages": [list(m) for m in messages], "max_tokens": max_tokens})


def render(judge: Judge, subject_input: Mapping[str, Any]) -> JudgeRequest:
    """The request for one subject, from its rubric input (``contract.inputs``)."""
    values = _values(subject_input)
    answers = _answers(subject_input) if judge.mode == "relative" else ()
    if answers:
        values["answers"] = "\n\n".join(f"Answer {i}:\n{_cut(a)}" for i, a in enumerate(answers, 1))
        values["count"] = str(len(answers))
    text = PLACEHOLDER.sub(lambda m: values.get(m[1], ""), judge.prompt)
    messages = ((("system", judge.system),) if judge.system else ()) + (("user", text),)
    return JudgeRequest(judge.id, judge.model, messages, judge.max_tokens, judge.seed,
                        prompt_hash(messages, judge.max_tokens), max(1, len(answers)))


def _values(subject_input: Mapping[str, Any]) -> dict[str, str]:
    turns = [t for t in subject_input.get("turns") or () if isinstance(t, Mapping)]
    last = turns[-1] if turns else {}
    conversation = "\n\n".join(f"User: {_cut(t.get('user_text'))}\nAssistant: {_cut(t.get('assistant_text'))}"
                               for t in turns)
    return {"user_text": _cut(last.get("user_text") if turns else subject_input.get("user_text")),
            "assistant_text": _cut(last.get("assistant_text") if turns
                                   else subject_input.get("assistant_text")),
            "conversation": conversation, "specialist": _cut(subject_input.get("specialist"))}


def _answers(subject_input: Mapping[str, Any]) -> tuple[str, ...]:
    """The answers the subject holds to its last question: every answered turn whose
    question the user asked again (a regeneration) and the last one, oldest first."""
    turns = [t for t in subject_input.get("turns") or () if isinstance(t, Mapping)]
    if not turns:
        return ()
    question = _fold(turns[-1].get("user_text"))
    same = [str(t.get("assistant_text") or "") for t in turns
            if _fold(t.get("user_text")) == question and t.get("answered")]
    return tuple(same[-MAX_ANSWERS:])


def _fold(value: Any) -> str:
    return " ".join(str(value or "").lower().split())


def _cut(value: Any) -> str:
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    return text if len(text) <= MAX_INSERT else text[:MAX_INSERT] + " […]"


def read(judge: Judge, raw: str, answers: int = 1) -> Reading:
    """The verdict read by the judge's rule; deterministic, so a re-score reads the same.
    One that does not read has the judge's ``unreadable`` score, if it has one (the error
    is kept: the record says why)."""
    reading = _read(judge, raw, answers)
    if reading.error is None or judge.unreadable is None:
        return reading
    wanted = answers if judge.mode == "relative" else 1
    return Reading((judge.unreadable,) * wanted, None, reading.error)


def _read(judge: Judge, raw: str, answers: int) -> Reading:
    if judge.parse == "choice":
        return _choice(judge, raw)
    wanted = answers if judge.mode == "relative" else 1
    numbers = _labelled(raw, wanted) or [float(n) for n in _NUMBER.findall(raw)]
    if len(numbers) < wanted:
        return Reading((), None, f"the judge's answer {_quote(raw)} holds {len(numbers)} "
                                 f"number(s); {wanted} expected")
    lo, hi = judge.scale
    picked = numbers[:wanted]
    outside = [n for n in picked if not lo <= n <= hi]
    if outside:
        return Reading((), picked[0], f"the judge's answer {_quote(raw)} gives {outside[0]:g}, "
                                      f"outside the scale [{lo:g}, {hi:g}]")
    return Reading(tuple((n - lo) / (hi - lo) for n in picked), picked[-1])


def _labelled(raw: str, wanted: int) -> list[float] | None:
    """A relative verdict written as "Answer 1: 7, Answer 2: 3" (or "1: 7 2: 3"): the
    numbers by label, when every answer has one; None otherwise."""
    if wanted < 2:
        return None
    found: dict[int, float] = {}
    for label, value in _LABELLED.findall(raw):
        found.setdefault(int(label), float(value))
    if not all(i in found for i in range(1, wanted + 1)):
        return None
    return [found[i] for i in range(1, wanted + 1)]


_LABELLED = re.compile(r"(?i)(?:answer\s*#?\s*)?\b(\d+)\s*[:=)]\s*(-?\d+(?:\.\d+)?)")


def _choice(judge: Judge, raw: str) -> Reading:
    found: tuple[int, str] | None = None
    for word in judge.choices:
        match = re.search(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])", raw, re.IGNORECASE)
        if match is not None and (found is None or match.start() < found[0]):
            found = (match.start(), word)
    if found is None:
        return Reading((), None, f"the judge's answer {_quote(raw)} names none of "
                                 f"{sorted(judge.choices)}")
    return Reading((judge.choices[found[1]],), None)


def _quote(raw: str) -> str:
    text = " ".join(raw.split())
    return repr(text if len(text) <= 80 else text[:77] + "...")


def judgement(judge: Judge, request: JudgeRequest, verdict: Verdict, reading: Reading) -> dict[str, Any]:
    """What a reward records of one judge: whose verdict on what, and how it was read."""
    return {"judge": judge.id, "model": judge.model, "prompt_hash": request.prompt_hash,
            "seed": judge.seed, "verdict": verdict.text, "verdict_event": verdict.event_id,
            "score": reading.score, "scores": list(reading.scores) if judge.mode == "relative" else None,
            "error": reading.error}


def variable(judge: Judge, verdict: Verdict, reading: Reading) -> dict[str, Any]:
    """``judge.<id>`` as an expression sees it."""
    return {"score": reading.score, "scores": list(reading.scores), "value": reading.value,
            "verdict": verdict.text}
