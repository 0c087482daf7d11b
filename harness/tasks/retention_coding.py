"""The `coding` retention set: small Python functions asked the way users ask for them.

Where it comes from: the everyday exercises people bring to a coding assistant (is it a
palindrome, the largest number, a leap year, the word counts), asked in four ways our
templates never use: a plain question, a function to complete from its docstring, a
request with a worked example, and a terse one-liner. None of its functions is a shape of
``coding_templates`` (seen or unseen) and its prompts never carry the family's
instruction sentence, so it is disjoint from every family and template; the hidden tests
decide, as for the family (``python_tests``). Its tasks are never served for experience,
so they are never trained on: every gate answers the same fixed draw with parent and
successor (``harness.probes``), and a successor that forgets what the base could do here
is not promoted. Sized so that the base solves part of it (a pass rate between 0.2 and
0.8: a loss can show), measured in docs/demo.md. Pure.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.tasks import Task, make_task
from harness.tasks.coding import N_TESTS
from harness.tasks.templates import Template, balanced

WORDS = ["level", "hello", "noon", "python", "radar", "house", "kayak", "green", "refer",
         "apple", "civic", "table", "madam", "light", "stats", "music"]
Args = tuple[Any, ...]


@dataclass(frozen=True)
class Exercise:
    """One function users ask for: its signature, what it does, a reference, inputs."""

    name: str
    params: str  # e.g. "s" or "a, b"
    does: str  # "returns True if s reads the same forwards and backwards"
    ref: Callable[..., Any]
    inputs: Callable[[random.Random], Args]


def _word(r: random.Random) -> Args:
    return (r.choice(WORDS),)


def _sentence(r: random.Random) -> Args:
    return (" ".join(r.choice(WORDS) for _ in range(r.randint(2, 6))),)


def _numbers(r: random.Random) -> Args:
    return ([r.randint(-20, 40) for _ in range(r.randint(3, 8))],)


def _positive(r: random.Random) -> Args:
    return ([r.randint(1, 30) for _ in range(r.randint(2, 7))],)


def _small(r: random.Random) -> Args:
    return (r.randint(0, 12),)


def _integer(r: random.Random) -> Args:
    return (r.randint(1, 60),)


def _signed(r: random.Random) -> Args:
    return (r.randint(-15, 15),)


def _two(r: random.Random) -> Args:
    return (r.randint(-30, 30), r.randint(-30, 30))


def _three(r: random.Random) -> Args:
    return tuple(r.randint(-50, 50) for _ in range(3))


def _year(r: random.Random) -> Args:
    return (r.choice([1900, 2000, 2024, 2023, 1996, 2100, 2400, 1999, 2012, 2019]),)


def _repeats(r: random.Random) -> Args:
    return ([r.randint(0, 5) for _ in range(r.randint(3, 9))],)


def _nested(r: random.Random) -> Args:
    return ([[r.randint(0, 9) for _ in range(r.randint(0, 3))] for _ in range(r.randint(1, 4))],)


def _maybe_sorted(r: random.Random) -> Args:
    xs = [r.randint(0, 20) for _ in range(r.randint(2, 6))]
    return (sorted(xs) if r.random() < 0.5 else xs,)


def _pair_of_words(r: random.Random) -> Args:
    a = r.choice(WORDS)
    b = "".join(r.sample(a, len(a))) if r.random() < 0.5 else r.choice(WORDS)
    return (a, b)


def _shouty(r: random.Random) -> Args:
    word = r.choice(WORDS)
    return (word.upper() if r.random() < 0.5 else word.capitalize(),)


def _name(r: random.Random) -> Args:
    first, last = r.sample(["ada", "alan", "grace", "linus", "guido", "barbara", "ken",
                            "margaret", "dennis", "frances"], 2)
    return (f"{first} {last}",)


def _mixed_case(r: random.Random) -> Args:
    return ("".join(c.upper() if r.random() < 0.4 else c for c in r.choice(WORDS)),)


def _list_and_item(r: random.Random) -> Args:
    xs = [r.randint(0, 9) for _ in range(r.randint(2, 6))]
    return (xs, r.choice(xs) if r.random() < 0.6 else r.randint(10, 15))


def _two_lists(r: random.Random) -> Args:
    return ([r.randint(0, 9) for _ in range(r.randint(1, 4))],
            [r.randint(0, 9) for _ in range(r.randint(1, 4))])


def _odd_numbers(r: random.Random) -> Args:
    return ([r.randint(-9, 30) for _ in range(r.choice([3, 5, 7]))],)


def _prime(n: int) -> bool:
    return n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))


def _factorial(n: int) -> int:
    out = 1
    for i in range(2, n + 1):
        out *= i
    return out


def _dedupe(xs: list[int]) -> list[int]:
    return list(dict.fromkeys(xs))


def _counts(s: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for w in s.split():
        out[w] = out.get(w, 0) + 1
    return out


EXERCISES = [
    Exercise("is_palindrome", "s", "returns True if the string s reads the same forwards and "
             "backwards, and False otherwise", lambda s: s == s[::-1], _word),
    Exercise("reverse_string", "s", "returns the string s reversed", lambda s: s[::-1], _word),
    Exercise("count_vowels", "s", "returns how many vowels (a, e, i, o, u) the string s contains",
             lambda s: sum(c in "aeiou" for c in s), _sentence),
    Exercise("word_count", "s", "returns the number of words in the string s",
             lambda s: len(s.split()), _sentence),
    Exercise("longest_word", "s", "returns the longest word in the string s (the first one "
             "if several are equally long)", lambda s: max(s.split(), key=len), _sentence),
    Exercise("is_anagram", "a, b", "returns True if the strings a and b contain the same "
             "letters in a different order or the same order, and False otherwise",
             lambda a, b: sorted(a) == sorted(b), _pair_of_words),
    Exercise("find_max", "numbers", "returns the largest number in the list numbers",
             max, _numbers),
    Exercise("find_min", "numbers", "returns the smallest number in the list numbers",
             min, _numbers),
    Exercise("sum_list", "numbers", "returns the sum of the numbers in the list numbers",
             sum, _numbers),
    Exercise("average", "numbers", "returns the average (arithmetic mean) of the numbers in "
             "the list numbers", lambda xs: sum(xs) / len(xs), _positive),
    Exercise("count_evens", "numbers", "returns how many even numbers the list numbers "
             "contains", lambda xs: sum(x % 2 == 0 for x in xs), _numbers),
    Exercise("remove_duplicates", "items", "returns a new list with the duplicates of the "
             "list items removed, keeping the first occurrence of each in order",
             _dedupe, _repeats),
    Exercise("is_sorted", "numbers", "returns True if the list numbers is sorted in "
             "ascending order, and False otherwise",
             lambda xs: xs == sorted(xs), _maybe_sorted),
    Exercise("flatten", "lists", "takes a list of lists and returns one list with all their "
             "items in order", lambda xss: [x for xs in xss for x in xs], _nested),
    Exercise("only_positive", "numbers", "returns a list of the numbers in the list numbers "
             "that are greater than zero", lambda xs: [x for x in xs if x > 0], _numbers),
    Exercise("is_even", "n", "returns True if the integer n is even, and False otherwise",
             lambda n: n % 2 == 0, _integer),
    Exercise("is_prime", "n", "returns True if n is a prime number, and False otherwise",
             _prime, _integer),
    Exercise("factorial", "n", "returns the factorial of n (the product 1 * 2 * ... * n, "
             "and 1 for n = 0)", _factorial, _small),
    Exercise("square", "n", "returns n multiplied by itself", lambda n: n * n, _signed),
    Exercise("max_of_three", "a, b, c", "returns the largest of the three numbers a, b and c",
             lambda a, b, c: max(a, b, c), _three),
    Exercise("absolute_difference", "a, b", "returns the absolute value of a minus b",
             lambda a, b: abs(a - b), _two),
    Exercise("is_leap_year", "year", "returns True if year is a leap year in the Gregorian "
             "calendar, and False otherwise",
             lambda y: y % 4 == 0 and (y % 100 != 0 or y % 400 == 0), _year),
    Exercise("celsius_to_fahrenheit", "celsius", "converts a temperature in degrees Celsius "
             "to degrees Fahrenheit (celsius * 9 / 5 + 32)", lambda c: c * 9 / 5 + 32,
             lambda r: (r.choice([0, 10, 20, 25, 30, 35, 40, 100, -10, -40]),)),
    Exercise("count_down", "n", "returns the list [n, n - 1, ..., 1]",
             lambda n: list(range(n, 0, -1)), _small),
    Exercise("word_frequencies", "text", "returns a dict mapping each word of the string "
             "text to how many times it appears", _counts, _sentence),
    Exercise("capitalize_first", "s", "returns the string s with its first letter in upper "
             "case", lambda s: s[:1].upper() + s[1:], _word),
    Exercise("is_uppercase", "s", "returns True if every letter of the string s is upper "
             "case, and False otherwise", lambda s: s.isupper(), _shouty),
    Exercise("initials", "name", "returns the initials of the full name given as a string, "
             "in upper case (\"ada lovelace\" gives \"AL\")",
             lambda s: "".join(w[0].upper() for w in s.split()), _name),
    Exercise("repeat_string", "s, n", "returns the string s repeated n times",
             lambda s, n: s * n, lambda r: (r.choice(WORDS), r.randint(0, 3))),
    Exercise("last_element", "items", "returns the last item of the list items",
             lambda xs: xs[-1], _numbers),
    Exercise("first_and_last", "items", "returns a list of the first and the last item of the "
             "list items", lambda xs: [xs[0], xs[-1]], _numbers),
    Exercise("sum_of_evens", "numbers", "returns the sum of the even numbers in the list "
             "numbers", lambda xs: sum(x for x in xs if x % 2 == 0), _numbers),
    Exercise("range_of", "numbers", "returns the difference between the largest and the "
             "smallest number in the list numbers", lambda xs: max(xs) - min(xs), _numbers),
    Exercise("min_max", "numbers", "returns a list [smallest, largest] of the list numbers",
             lambda xs: [min(xs), max(xs)], _numbers),
    Exercise("contains", "items, x", "returns True if x is in the list items, and False "
             "otherwise", lambda xs, x: x in xs, _list_and_item),
    Exercise("index_of", "items, x", "returns the index of the first x in the list items, "
             "or -1 if x is not in it", lambda xs, x: xs.index(x) if x in xs else -1,
             _list_and_item),
    Exercise("merge_lists", "a, b", "returns one list with the items of the list a followed "
             "by those of the list b", lambda a, b: a + b, _two_lists),
    Exercise("common_items", "a, b", "returns a list of the items of the list a that are also "
             "in the list b, in the order of a", lambda a, b: [x for x in a if x in b],
             _two_lists),
    Exercise("rectangle_area", "width, height", "returns the area of a rectangle of the given "
             "width and height", lambda w, h: w * h, lambda r: (r.randint(1, 20), r.randint(1, 20))),
    Exercise("sign", "n", "returns -1 if n is negative, 0 if it is zero and 1 if it is "
             "positive", lambda n: (n > 0) - (n < 0), _signed),
    Exercise("hours_to_minutes", "hours", "returns how many minutes there are in the given "
             "number of hours", lambda h: h * 60, _small),
    Exercise("median", "numbers", "returns the median of the list numbers, which has an odd "
             "length", lambda xs: sorted(xs)[len(xs) // 2], _odd_numbers),
    Exercise("swap_case", "s", "returns the string s with upper case letters made lower case "
             "and lower case letters made upper case", lambda s: s.swapcase(), _mixed_case),
]
STYLES = ("ask", "docstring", "example", "terse")


def _tests(rng: random.Random, exercise: Exercise) -> list[dict[str, Any]]:
    """``N_TESTS`` calls, their expected outputs as JSON gives them back, as varied as the
    inputs allow (a constant answer must not pass)."""
    best: list[dict[str, Any]] = []
    for _ in range(40):
        calls = [json.loads(json.dumps(exercise.inputs(rng))) for _ in range(N_TESTS)]
        tests = [{"args": list(a), "expected": json.loads(json.dumps(exercise.ref(*a)))}
                 for a in calls]
        if len({json.dumps(t["expected"]) for t in tests}) > len({json.dumps(t["expected"])
                                                                 for t in best}):
            best = tests
    return best


def _call(exercise: Exercise, args: Sequence[Any]) -> str:
    return f"{exercise.name}({', '.join(repr(a) for a in args)})"


ASK = ("Can you write a Python function `{sig}` that {does}? Please put the code in a "
       "```python block.",
       "Write me a Python function `{sig}` which {does}. Put it in a ```python block.",
       "How do I write a Python function `{sig}` that {does}? Just show the code in a "
       "```python block.")
DOCSTRING = ("Complete this Python function and reply with the whole function in a ```python "
             "block:", "Fill in the body of this function (reply with the complete function "
             "in a ```python block):")
TERSE = ("python function {sig}: {does}. code only, in a ```python block",
         "{sig} in python - {does}. ```python block only please")


def ask(e: Exercise, rng: random.Random) -> str:
    return rng.choice(ASK).format(sig=f"{e.name}({e.params})", does=e.does)


def docstring(e: Exercise, rng: random.Random) -> str:
    return (f"{rng.choice(DOCSTRING)}\n\n```python\ndef {e.name}({e.params}):\n"
            f'    """{e.does[0].upper()}{e.does[1:]}."""\n```')


def example(e: Exercise, rng: random.Random) -> str:
    args = e.inputs(rng)
    return (f"I need a Python function `{e.name}({e.params})` that {e.does}. For example, "
            f"`{_call(e, args)}` should return `{e.ref(*args)!r}`. Answer with the code in a "
            "```python block.")


def terse(e: Exercise, rng: random.Random) -> str:
    return rng.choice(TERSE).format(sig=f"{e.name}({e.params})", does=e.does)


PHRASINGS = {"ask": ask, "docstring": docstring, "example": example, "terse": terse}


def _template(exercise: Exercise, style: str) -> Template:
    def task(rng: random.Random) -> Task:
        prompt = PHRASINGS[style](exercise, rng)
        return make_task("coding", "retention", prompt,
                         {"kind": "python_tests", "entry": exercise.name,
                          "tests": _tests(rng, exercise)})

    return Template(f"coding_retention.{exercise.name}.{style}", style, task)


TEMPLATES = [_template(e, s) for e in EXERCISES for s in STYLES]


def coding_retention_tasks(n: int, seed: int) -> list[Task]:
    """The set: ``n`` distinct tasks spread evenly over every exercise and phrasing."""
    return balanced(TEMPLATES, n, seed)
