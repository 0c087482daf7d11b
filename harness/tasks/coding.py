"""`coding`: write one small Python function; hidden unit tests decide.

Where the family comes from: the MBPP / HumanEval style (a one-sentence spec, a named
function, hidden asserts), scaled down to what a 135M model can sometimes do. Tasks are
compositions, so there are hundreds of distinct prompts and the held-out ones test the
same skills with different pieces:

- list pipelines: "the <aggregate> of the <map> of the <filter> numbers in xs";
- string transforms with a parameter (a letter, a separator, a count).

The reference implementation exists only here, to compute the hidden expected outputs;
the check (`checks.sandbox`) compares the model's function against them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from harness.tasks import Task, make_task

INSTRUCTION = "Reply with only the code in a ```python block."
N_TESTS = 6

# (phrase, predicate); K is filled in from the task's parameter
FILTERS: list[tuple[str, Callable[[int, int], bool]]] = [
    ("even numbers", lambda x, k: x % 2 == 0),
    ("odd numbers", lambda x, k: x % 2 == 1),
    ("positive numbers", lambda x, k: x > 0),
    ("negative numbers", lambda x, k: x < 0),
    ("numbers greater than {k}", lambda x, k: x > k),
    ("numbers less than {k}", lambda x, k: x < k),
    ("numbers divisible by {k}", lambda x, k: x % k == 0),
]
MAPS: list[tuple[str, Callable[[int, int], int]]] = [
    ("squares of the", lambda x, k: x * x),
    ("doubles of the", lambda x, k: 2 * x),
    ("absolute values of the", lambda x, k: abs(x)),
    ("values plus {k} of the", lambda x, k: x + k),
    ("", lambda x, k: x),
]
AGGREGATES: list[tuple[str, str, Callable[[list[int]], Any]]] = [
    ("sum", "returns the sum of the {what} in xs (0 if there are none)", sum),
    ("count", "returns how many {what} there are in xs", len),
    ("list", "returns a list of the {what} in xs, in their original order", list),
    ("max", "returns the largest of the {what} in xs (None if there are none)",
     lambda v: max(v) if v else None),
]


def list_pipeline(rng: random.Random) -> Task:
    (fphrase, pred), (mphrase, fn), (aname, agg_text, agg) = (
        rng.choice(FILTERS), rng.choice(MAPS), rng.choice(AGGREGATES))
    k = rng.randint(2, 5)
    what = f"{mphrase} {fphrase}".strip().format(k=k)
    name = f"{aname}_{_slug(mphrase) or 'value'}_{_slug(fphrase)}"
    spec = agg_text.format(what=what)

    def ref(xs: list[int]) -> Any:
        return agg([fn(x, k) for x in xs if pred(x, k)])

    inputs: list[list[Any]] = [[[]]] + [[[rng.randint(-9, 12) for _ in range(rng.randint(1, 7))]]
                       for _ in range(N_TESTS - 1)]
    return _task("list_pipeline", name, "xs", f"takes a list of integers xs and {spec}",
                 ref, inputs)


WORDS = ["apple", "river", "stone", "cloud", "tiger", "lemon", "piano", "ocean", "maple"]
STRING_OPS: list[tuple[str, str, Callable[[str, Any], Any], Callable[[random.Random], Any]]] = [
    ("count_char", "returns how many times the letter '{p}' appears in s",
     lambda s, p: s.count(p), lambda r: r.choice("aeiorst")),
    ("replace_char", "returns s with every '{p}' replaced by '*'",
     lambda s, p: s.replace(p, "*"), lambda r: r.choice("aeiorst")),
    ("join_words", "returns the words of s (split on spaces) joined with '{p}'",
     lambda s, p: p.join(s.split()), lambda r: r.choice(["-", "+", "_", ", "])),
    ("first_chars", "returns a string made of the first {p} characters of every word in s",
     lambda s, p: "".join(w[:p] for w in s.split()), lambda r: r.randint(1, 3)),
    ("repeat_last", "returns the last character of s repeated {p} times ('' if s is empty)",
     lambda s, p: s[-1:] * p, lambda r: r.randint(2, 5)),
    ("upper_words", "returns s with the first {p} words in upper case and the rest unchanged",
     lambda s, p: " ".join(w.upper() if i < p else w for i, w in enumerate(s.split())),
     lambda r: r.randint(1, 3)),
    ("long_words", "returns a list of the words in s that have more than {p} letters",
     lambda s, p: [w for w in s.split() if len(w) > p], lambda r: r.randint(3, 5)),
]


def string_transform(rng: random.Random) -> Task:
    key, text, op, param = rng.choice(STRING_OPS)
    p = param(rng)
    name = f"{key}_{_slug(str(p)) or 'sep'}"

    def ref(s: str) -> Any:
        return op(s, p)

    inputs = [[""]] + [[" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))]
                       for _ in range(N_TESTS - 1)]
    return _task("string_transform", name, "s",
                 "takes a string s and " + text.format(p=p), ref, inputs)


def coding_task(rng: random.Random) -> Task:
    return (list_pipeline if rng.random() < 0.5 else string_transform)(rng)


def _task(family: str, name: str, arg: str, spec: str, ref: Callable, inputs: list) -> Task:
    prompt = f"Write a Python function `{name}({arg})` that {spec}. {INSTRUCTION}"
    tests = [{"args": args, "expected": ref(*args)} for args in inputs]
    return make_task("coding", family, prompt,
                     {"kind": "python_tests", "entry": name, "tests": tests})


def _slug(text: str) -> str:
    words = [w for w in text.replace("{k}", "k").split() if w.isalnum() and w not in {
        "of", "the", "numbers", "values", "than", "by"}]
    return "_".join(words)[:24]
