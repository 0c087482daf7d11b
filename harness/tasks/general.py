"""`general`: short answers with checkable content and format, for no specialist.

Where the set comes from: the "verifiable answer" style of instruction-following
evaluations (GSM8K-like arithmetic answered with the number only, IFEval-like "and
nothing else" constraints, word games with one right answer), kept to what a 135M
model can sometimes do. It is disjoint from every specialist's family: no code, no UI
spec, no tool call, and no format-rule-on-a-topic task (the ``chat`` family). Nothing
here is ever trained on; every gate answers the same fixed draw (``general_tasks``) with
parent and successor, so a successor that got better at its family while getting worse
at everything else is caught (``harness.probes``, the non-inferiority check). The check
is ``answer_rules`` (``harness.checks.answers``). Pure.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from harness.tasks import Task, draw, make_task
from harness.tasks.templates import Template, pick

SYSTEM = "Answer briefly and exactly as asked."
SHOT = ("What is 2 plus 2? Answer with the number only.", "4")
WORDS = ["apple", "river", "stone", "cloud", "tiger", "lemon", "piano", "ocean", "maple",
         "garden", "window", "rabbit", "silver", "candle", "pencil", "forest"]
COLOURS = ["red", "blue", "green", "yellow", "orange", "purple", "pink", "black", "white",
           "brown", "grey", "gray"]
ANIMALS = ["cat", "dog", "horse", "cow", "sheep", "goat", "lion", "tiger", "bear", "wolf",
           "fox", "mouse", "rabbit", "bird", "fish", "duck", "pig", "deer", "owl", "frog"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
OPPOSITES = {"hot": ["cold"], "big": ["small", "little"], "up": ["down"], "fast": ["slow"],
             "happy": ["sad", "unhappy"], "open": ["closed", "shut"], "light": ["dark", "heavy"],
             "early": ["late"], "full": ["empty"], "wet": ["dry"]}
Made = tuple[str, list[dict[str, Any]]]  # (the question, the rules its answer must meet)


def _exact(answer: Any, case: bool = False) -> list[dict[str, Any]]:
    return [{"rule": "exact", "answer": str(answer), "case": case}]


def plus(r: random.Random) -> Made:
    a, b = r.randint(2, 60), r.randint(2, 40)
    return f"What is {a} plus {b}? Answer with the number only.", _exact(a + b)


def times(r: random.Random) -> Made:
    a, b = r.randint(2, 12), r.randint(2, 9)
    return f"What is {a} times {b}? Answer with the number only.", _exact(a * b)


def letters(r: random.Random) -> Made:
    w = r.choice(WORDS)
    return f"How many letters are in the word '{w}'? Answer with the number only.", _exact(len(w))


def backwards(r: random.Random) -> Made:
    w = r.choice(WORDS)
    return f"Write the word '{w}' backwards, in lowercase, and nothing else.", _exact(w[::-1])


def capitals(r: random.Random) -> Made:
    phrase = " ".join(r.sample(WORDS, 2))
    return f"Write '{phrase}' in capital letters and nothing else.", _exact(phrase.upper(), True)


def alphabetical(r: random.Random) -> Made:
    chosen = r.sample(WORDS, 3)
    return (f"Put these words in alphabetical order, separated by commas, and write nothing "
            f"else: {', '.join(chosen)}."), [{"rule": "sequence", "items": sorted(chosen)}]


def bigger(r: random.Random) -> Made:
    x, y = r.sample(range(3, 99), 2)
    return f"Is {x} bigger than {y}? Answer yes or no.", _exact("yes" if x > y else "no")


def name_some(r: random.Random) -> Made:
    n, (kind, pool) = r.randint(2, 4), r.choice([("colours", COLOURS), ("animals", ANIMALS)])
    return (f"Name {n} {kind}, separated by commas, and nothing else.",
            [{"rule": "items", "n": n, "from": pool}])


def first_letter(r: random.Random) -> Made:
    w = r.choice(WORDS)
    return f"What is the first letter of '{w}'? Answer with the letter only.", _exact(w[0])


def next_day(r: random.Random) -> Made:
    i = r.randrange(7)
    return f"What day comes after {DAYS[i]}? Answer with one word.", _exact(DAYS[(i + 1) % 7])


def opposite(r: random.Random) -> Made:
    w = r.choice(sorted(OPPOSITES))
    return (f"What is the opposite of '{w}'? Answer with one word.",
            [{"rule": "one_of", "answers": OPPOSITES[w]}])


def largest(r: random.Random) -> Made:
    xs = r.sample(range(1, 200), 3)
    return (f"Which is the largest number: {', '.join(map(str, xs))}? Answer with the number only.",
            _exact(max(xs)))


def _template(name: str, group: str, make: Callable[[random.Random], Made]) -> Template:
    def task(rng: random.Random) -> Task:
        question, rules = make(rng)
        return make_task("general", group, question, {"kind": "answer_rules", "rules": rules},
                         system=SYSTEM, shots=(SHOT,))

    return Template(f"general.{name}", group, task)


TEMPLATES = [
    _template("plus", "arithmetic", plus), _template("times", "arithmetic", times),
    _template("bigger", "arithmetic", bigger), _template("largest", "arithmetic", largest),
    _template("letters", "words", letters), _template("backwards", "words", backwards),
    _template("capitals", "words", capitals), _template("first_letter", "words", first_letter),
    _template("alphabetical", "words", alphabetical),
    _template("name_some", "knowledge", name_some), _template("next_day", "knowledge", next_day),
    _template("opposite", "knowledge", opposite),
]
general_task = pick(TEMPLATES, "seen")
GENERAL_SEED = 7


def general_tasks(n: int, seed: int = GENERAL_SEED) -> list[Task]:
    """The general set: the same ``n`` tasks on every machine and in every gate."""
    return draw(general_task, n, seed)
