"""`coding`: write one small Python function; hidden unit tests decide.

Where the family comes from: the MBPP / HumanEval style (a one-sentence spec, a named
function, hidden asserts), scaled down to what a 135M model can sometimes do. It is
made of dozens of program shapes (``coding_templates``: strings, lists, dicts,
arithmetic, recursion, parsing, small algorithms), each with a parameter and its own
hidden tests; a few shapes per group are held out whole (never trained on) for the
unseen-template measure.

A function's name carries every parameter of its task (``count_char_e``,
``sum_squares_greater_than_4``), so two prompts never share a name: a held-out task is
never a trained one under another parameter's name. The hidden tests are drawn so
that their expected outputs differ (at least ``DISTINCT_OUTPUTS`` values over
``N_TESTS`` calls): an answer that returns a constant, or only handles the empty input,
earns at most a test or two, not a share of partial credit. The reference
implementation exists only here, to compute the expected outputs; the check
(``checks.sandbox``) compares the model's function against them.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from harness.tasks import Task, make_task
from harness.tasks.templates import UNSEEN, Template, pick

INSTRUCTION = "Reply with only the code in a ```python block."
N_TESTS = 6
DISTINCT_OUTPUTS = 4  # at least this many different expected values among the tests
_INPUT_DRAWS = 60  # tries per test set before settling for fewer distinct outputs


# A shape's parameters: letters, separators and small integers, by the name the format
# strings use ("c", "sep", "k").
ShapeParams = Mapping[str, str | int]


class HiddenTest(TypedDict):
    """One call of the hidden tests, as JSON values (what the sandbox compares)."""

    args: list[Any]
    expected: Any


@dataclass(frozen=True)
class Shape:
    """One program shape: ``name`` and ``spec`` are format strings over a parameter dict."""

    name: str  # e.g. "count_char_{c}": a valid identifier once formatted
    group: str
    arg: str  # the argument, as the spec introduces it: "s", "xs", "d", "n"
    takes: str  # e.g. "takes a string s"
    spec: str  # e.g. "returns how many times the letter '{c}' appears in s"
    params: Sequence[ShapeParams]
    ref: Callable[..., Any]  # ref(input, **params) -> expected output
    inputs: Callable[[random.Random, ShapeParams], Any]  # one input for these params
    unseen: bool = False

    def template(self) -> Template:
        stem = re.sub(r"_?\{\w+\}", "", self.name)
        return Template(f"coding.{stem}", self.group, self.make, self.unseen)

    def make(self, rng: random.Random) -> Task:
        p = self.params[rng.randrange(len(self.params))]
        name = self.name.format(**{k: _ident(v) for k, v in p.items()})
        tests = hidden_tests(rng, lambda r: self.inputs(r, p), lambda x: self.ref(x, **p))
        prompt = (f"Write a Python function `{name}({self.arg})` that {self.takes} and "
                  f"{self.spec.format(**p)}. {INSTRUCTION}")
        return make_task("coding", self.group, prompt,
                         {"kind": "python_tests", "entry": name, "tests": tests})


def hidden_tests(rng: random.Random, draw: Callable[[random.Random], Any],
                 ref: Callable[[Any], Any]) -> list[HiddenTest]:
    """``N_TESTS`` calls whose expected outputs differ as much as the shape allows (JSON
    values, as the sandbox returns them: tuples become lists, keys strings)."""
    best: list[HiddenTest] = []
    for _ in range(_INPUT_DRAWS):
        args = [json.loads(json.dumps(draw(rng))) for _ in range(N_TESTS)]
        tests: list[HiddenTest] = [{"args": [a], "expected": json.loads(json.dumps(ref(a)))} for a in args]
        if _distinct(tests) > _distinct(best):
            best = tests
        if _distinct(best) >= DISTINCT_OUTPUTS:
            break
    return best


def _distinct(tests: list[HiddenTest]) -> int:
    return len({json.dumps(t["expected"], sort_keys=True) for t in tests})


def _ident(value: Any) -> str:
    """A parameter as part of a Python name: -3 -> m3, "," -> comma."""
    if isinstance(value, int):
        return f"m{-value}" if value < 0 else str(value)
    return SYMBOLS.get(str(value), "".join(c for c in str(value) if c.isalnum()) or "x")


SYMBOLS = {"-": "dash", "+": "plus", "_": "underscore", ", ": "comma", ",": "comma",
           "/": "slash", " | ": "bar", "|": "bar", ".": "dot", ";": "semicolon", ":": "colon",
           "=": "equals", "*": "star", "#": "hash", "@": "at", "!": "bang", "~": "tilde",
           "$": "dollar", "%": "percent", "&": "amp"}


def templates() -> list[Template]:
    from harness.tasks.coding_templates import SHAPES

    return [s.template() for s in SHAPES]


TEMPLATES = templates()
coding_task = pick(TEMPLATES, "seen")
coding_unseen_task = pick(TEMPLATES, UNSEEN)
