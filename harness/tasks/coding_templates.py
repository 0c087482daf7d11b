"""The `coding` family's program shapes: seven groups, one or two held out whole per group.

Each shape is a one-line spec a small model can sometimes get right, a parameter that
makes its instances (and goes into the function's name), a reference implementation and
an input generator. ``unseen=True`` marks the shapes held out for the unseen-template
measure: no train task and no instance-held-out task is ever drawn from them; they take
more parameters than the others, so that the measure can draw about ninety tasks (of
seven shapes: cases of one shape go together, so it counts fewer independent ones).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
from typing import Any

from harness.tasks.coding import Shape, ShapeParams

WORDS = ["apple", "river", "stone", "cloud", "tiger", "lemon", "piano", "ocean", "maple",
         "sun", "bird", "tree", "salt", "rain", "iron", "star", "wolf", "bean", "lake", "rose"]
NAMES = ["ann", "bob", "eve", "dan", "lia", "tom", "ria", "noe", "kai", "ida"]
LETTERS = "abceilmnoprstuw"  # each in some of WORDS


def words(r: random.Random, p: ShapeParams | None = None) -> str:
    return " ".join(r.choice(WORDS) for _ in range(r.randint(2, 5)))


def ints(r: random.Random, p: ShapeParams | None = None) -> list[int]:
    return [r.randint(-9, 12) for _ in range(r.randint(3, 7))]


def small_ints(r: random.Random, p: ShapeParams | None = None) -> list[int]:
    return [r.randint(0, 3) for _ in range(r.randint(4, 9))]


def scores(r: random.Random, p: ShapeParams | None = None) -> dict[str, int]:
    return {n: r.randint(0, 9) for n in r.sample(NAMES, r.randint(3, 5))}


def number(r: random.Random, p: ShapeParams | None = None) -> int:
    return r.randint(0, 40)


def nested(r: random.Random, depth: int = 0) -> list[Any]:
    items: list[Any] = []
    for _ in range(r.randint(1, 4)):
        items.append(nested(r, depth + 1) if depth < 2 and r.random() < 0.3 else r.randint(0, 6))
    return items


def nested_input(r: random.Random, p: ShapeParams) -> list[Any]:
    return nested(r)


def tagged_text(r: random.Random, p: ShapeParams) -> str:
    parts = [r.choice(WORDS) if r.random() < 0.5 else f"{p['c']}{r.randint(0, 60)}"
             for _ in range(r.randint(3, 6))]
    return " ".join(parts)


def mixed_text(r: random.Random, p: ShapeParams) -> str:
    return " ".join(r.choice(WORDS) if r.random() < 0.5 else str(r.randint(0, 30))
                    for _ in range(r.randint(3, 7)))


def pairs_text(r: random.Random, p: ShapeParams) -> str:
    return ",".join(f"{n}{p['sep']}{r.randint(0, 20)}" for n in r.sample(NAMES, r.randint(2, 4)))


def fields_text(r: random.Random, p: ShapeParams) -> str:
    return str(p["sep"]).join(r.choice(WORDS) for _ in range(r.randint(1, 7)))


def csv_lines(r: random.Random, p: ShapeParams) -> str:
    return "\n".join(",".join(str(r.randint(0, 50)) for _ in range(3)) for _ in range(r.randint(2, 4)))


def each(name: str, values: Iterable[str | int]) -> list[ShapeParams]:
    return [{name: v} for v in values]


def _fib(n: int, a: int, b: int) -> int:
    for _ in range(n):
        a, b = b, a + b
    return a


def _flat(xs: list[Any]) -> list[int]:
    return [y for x in xs for y in (_flat(x) if isinstance(x, list) else [x])]


def _depth(xs: Any) -> int:
    return 1 + max((_depth(x) for x in xs if isinstance(x, list)), default=0)


def _divisions(n: int, k: int) -> int:
    count = 0
    while n >= k:
        n //= k
        count += 1
    return count


def _product(xs: list[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def _runs(xs: list[int], k: int) -> int:
    best = current = 0
    for x in xs:
        current = current + 1 if x == k else 0
        best = max(best, current)
    return best


S, L, D, N = "takes a string s", "takes a list of integers xs", \
    "takes a dict d mapping names to integers", "takes an integer n >= 0"
SHAPES = [
    # --- strings ----------------------------------------------------------------------
    Shape("count_char_{c}", "strings", "s", S, "returns how many times the letter '{c}' appears in s",
          each("c", LETTERS), lambda s, c: s.count(c), words),
    Shape("replace_{c}_with_{r}", "strings", "s", S, "returns s with every '{c}' replaced by '{r}'",
          [{"c": c, "r": r} for c in LETTERS for r in "*#_"], lambda s, c, r: s.replace(c, r), words),
    Shape("remove_char_{c}", "strings", "s", S, "returns s with every '{c}' removed",
          each("c", LETTERS), lambda s, c: s.replace(c, ""), words),
    Shape("shout_words_with_{c}", "strings", "s", S,
          "returns s with every word that contains the letter '{c}' in upper case",
          each("c", LETTERS), lambda s, c: " ".join(w.upper() if c in w else w for w in s.split()),
          words),
    Shape("join_words_{sep}", "strings", "s", S,
          "returns the words of s (split on spaces) joined with '{sep}'",
          each("sep", ["-", "+", "_", ", ", "/", " | ", ".", ";", ":", "="]),
          lambda s, sep: sep.join(s.split()), words),
    Shape("first_{n}_chars_joined_{sep}", "strings", "s", S,
          "returns the first {n} characters of every word in s, joined with '{sep}'",
          [{"n": n, "sep": sep} for n in range(1, 5) for sep in ["-", "_", "+", "."]],
          lambda s, n, sep: sep.join(w[:n] for w in s.split()), words),
    Shape("repeat_last_{n}", "strings", "s", S, "returns the last character of s repeated {n} times",
          each("n", range(2, 10)), lambda s, n: s[-1:] * n, words),
    Shape("long_words_{n}", "strings", "s", S,
          "returns a list of the words in s that have more than {n} letters",
          each("n", range(2, 7)), lambda s, n: [w for w in s.split() if len(w) > n], words),
    Shape("surround_{c}", "strings", "s", S, "returns s with '{c}' added at its start and at its end",
          each("c", "*#@!~+="), lambda s, c: c + s + c, words),
    Shape("words_with_{c}", "strings", "s", S,
          "returns how many words of s contain the letter '{c}'",
          each("c", LETTERS), lambda s, c: sum(c in w for w in s.split()), words),
    Shape("capitalise_longer_than_{n}", "strings", "s", S,
          "returns s with the first letter of every word longer than {n} letters in upper case",
          each("n", range(0, 6)),
          lambda s, n: " ".join(w[:1].upper() + w[1:] if len(w) > n else w for w in s.split()),
          words, unseen=True),
    # --- lists ------------------------------------------------------------------------
    Shape("sum_greater_than_{k}", "lists", "xs", L,
          "returns the sum of the numbers in xs that are greater than {k}",
          each("k", range(-9, 12)), lambda xs, k: sum(x for x in xs if x > k), ints),
    Shape("count_less_than_{k}", "lists", "xs", L,
          "returns how many numbers in xs are less than {k}",
          each("k", range(-9, 12)), lambda xs, k: sum(x < k for x in xs), ints),
    Shape("squares_of_multiples_of_{k}", "lists", "xs", L,
          "returns a list of the squares of the numbers in xs that are divisible by {k}, in order",
          each("k", range(2, 8)), lambda xs, k: [x * x for x in xs if x % k == 0], ints),
    Shape("multiply_each_by_{k}", "lists", "xs", L, "returns a list of the numbers of xs, each "
          "multiplied by {k}", each("k", range(2, 13)), lambda xs, k: [x * k for x in xs], ints),
    Shape("product_of_first_{n}", "lists", "xs", L,
          "returns the product of the first {n} numbers of xs", each("n", range(1, 4)),
          lambda xs, n: _product(xs[:n]), ints),
    Shape("negatives_times_{k}", "lists", "xs", L, "returns the sum of the negative numbers "
          "of xs multiplied by {k}", each("k", range(1, 10)),
          lambda xs, k: k * sum(x for x in xs if x < 0), ints),
    Shape("add_{k}_to_each", "lists", "xs", L, "returns a list with {k} added to every number of xs",
          each("k", range(1, 16)), lambda xs, k: [x + k for x in xs], ints),
    Shape("clip_{lo}_{hi}", "lists", "xs", L,
          "returns xs with every number below {lo} replaced by {lo} and every number above {hi} "
          "replaced by {hi}", [{"lo": lo, "hi": hi} for lo in range(-5, 2) for hi in range(2, 10)],
          lambda xs, lo, hi: [min(max(x, lo), hi) for x in xs], ints),
    Shape("rotate_left_{n}", "lists", "xs", L,
          "returns xs rotated left by {n} positions (its first {n} items moved to the end, in order)",
          each("n", range(1, 4)), lambda xs, n: xs[n:] + xs[:n], ints),
    Shape("every_{n}th_item", "lists", "xs", L,
          "returns a list of every {n}th item of xs, starting with the first",
          each("n", range(2, 5)), lambda xs, n: xs[::n], ints),
    Shape("index_of_first_above_{k}", "lists", "xs", L,
          "returns the index of the first number greater than {k} in xs, or -1 if there is none",
          each("k", range(-3, 12)), lambda xs, k: next((i for i, x in enumerate(xs) if x > k), -1), ints),
    Shape("last_index_of_{k}", "lists", "xs", L,
          "returns the index of the last item equal to {k} in xs, or -1 if there is none",
          each("k", range(0, 4)), lambda xs, k: max((i for i, x in enumerate(xs) if x == k), default=-1),
          small_ints, unseen=True),
    # --- dicts ------------------------------------------------------------------------
    Shape("names_above_{k}", "dicts", "d", D,
          "returns a sorted list of the names whose value is greater than {k}",
          each("k", range(0, 9)), lambda d, k: sorted(n for n, v in d.items() if v > k), scores),
    Shape("add_{k}_to_values", "dicts", "d", D, "returns a new dict with {k} added to every value",
          each("k", range(1, 10)), lambda d, k: {n: v + k for n, v in d.items()}, scores),
    Shape("value_of_{name}_or_{k}", "dicts", "d", D,
          "returns the value of '{name}' in d, or {k} if d has no '{name}'",
          [{"name": n, "k": k} for n in NAMES for k in (-1, 0, 10, 99)],
          lambda d, name, k: d.get(name, k), scores),
    Shape("total_of_names_with_{c}", "dicts", "d", D,
          "returns the sum of the values whose name contains the letter '{c}'",
          each("c", "abdeiklnort"), lambda d, c: sum(v for n, v in d.items() if c in n), scores),
    Shape("count_values_below_{k}", "dicts", "d", D, "returns how many values are less than {k}",
          each("k", range(1, 10)), lambda d, k: sum(v < k for v in d.values()), scores),
    Shape("names_starting_with_{c}", "dicts", "d", D,
          "returns a sorted list of the names that start with the letter '{c}'",
          each("c", "abdeiklnrt"), lambda d, c: sorted(n for n in d if n.startswith(c)), scores,
          unseen=True),
    # --- arithmetic -------------------------------------------------------------------
    Shape("digit_sum_times_{k}", "arithmetic", "n", N,
          "returns the sum of the digits of n multiplied by {k}",
          each("k", range(1, 10)), lambda n, k: k * sum(map(int, str(n))), number),
    Shape("count_multiples_of_{k}", "arithmetic", "n", N,
          "returns how many of the numbers 1, 2, ..., n are divisible by {k}",
          each("k", range(2, 16)), lambda n, k: n // k, number),
    Shape("times_{a}_plus_{b}", "arithmetic", "n", N, "returns n multiplied by {a}, plus {b}",
          [{"a": a, "b": b} for a in range(2, 7) for b in range(1, 8)], lambda n, a, b: a * n + b,
          number),
    Shape("count_digit_{d}", "arithmetic", "n", N, "returns how many times the digit {d} appears in n",
          each("d", range(0, 10)), lambda n, d: str(n).count(str(d)),
          lambda r, p: int("".join(r.choice("0123456789" if r.random() < 0.5 else str(p["d"]))
                                   for _ in range(r.randint(1, 6))))),
    Shape("gcd_with_{k}", "arithmetic", "n", N,
          "returns the greatest common divisor of n and {k}",
          each("k", [4, 6, 8, 9, 10, 12, 14, 15, 16, 18, 20, 21, 22, 24]), lambda n, k: math.gcd(n, k),
          lambda r, p: r.randint(1, 90)),
    Shape("sum_of_multiples_of_{k}", "arithmetic", "n", N,
          "returns the sum of the numbers from 1 to n that are divisible by {k}",
          each("k", range(2, 13)), lambda n, k: sum(i for i in range(1, n + 1) if i % k == 0), number),
    Shape("power_of_{k}", "arithmetic", "n", N, "returns {k} raised to the power n",
          each("k", range(2, 8)), lambda n, k: k ** (n % 12), lambda r, p: r.randint(0, 11)),
    Shape("round_down_to_{k}", "arithmetic", "n", N, "returns n rounded down to a multiple of {k}",
          each("k", range(2, 21)), lambda n, k: n - n % k, number),
    Shape("reversed_digits_plus_{k}", "arithmetic", "n", N,
          "returns the number whose digits are those of n in reverse order, plus {k}",
          each("k", range(0, 30)), lambda n, k: int(str(n)[::-1]) + k,
          lambda r, p: r.randint(10, 999), unseen=True),
    # --- recursion --------------------------------------------------------------------
    Shape("fib_from_{a}_{b}", "recursion", "n", N,
          "returns item n (counting from 0) of the sequence that starts {a}, {b} and in which "
          "every later item is the sum of the two before it",
          [{"a": a, "b": b} for a in range(0, 5) for b in range(1, 6)],
          lambda n, a, b: _fib(n, a, b), lambda r, p: r.randint(0, 15)),
    Shape("nested_sum_times_{k}", "recursion", "xs", "takes a list xs of integers and lists "
          "(nested to any depth)", "returns the sum of every integer in it, multiplied by {k}",
          each("k", range(1, 10)), lambda xs, k: k * sum(_flat(xs)), nested_input),
    Shape("nested_count_of_{k}", "recursion", "xs", "takes a list xs of integers and lists "
          "(nested to any depth)", "returns how many times the integer {k} appears in it",
          each("k", range(0, 7)), lambda xs, k: _flat(xs).count(k), nested_input),
    Shape("divisions_by_{k}", "recursion", "n", N,
          "returns how many times n can be divided by {k} (integer division) before it is "
          "less than {k}", each("k", range(2, 10)), lambda n, k: _divisions(n, k),
          lambda r, p: r.randint(0, 500)),
    Shape("nesting_depth_plus_{k}", "recursion", "xs", "takes a list xs of integers and lists "
          "(nested to any depth)", "returns how deeply it is nested (1 for a flat list) plus {k}",
          each("k", range(0, 20)), lambda xs, k: _depth(xs) + k, nested_input, unseen=True),
    # --- parsing ----------------------------------------------------------------------
    Shape("sum_of_numbers_times_{k}", "parsing", "s", "takes a string s of words and "
          "integers separated by spaces", "returns the sum of the integers in it multiplied by {k}",
          each("k", range(1, 10)), lambda s, k: k * sum(int(w) for w in s.split() if w.isdigit()),
          mixed_text),
    Shape("parse_pairs_{sep}", "parsing", "s", "takes a string s like 'ann{sep}3,bob{sep}5'",
          "returns a dict mapping each name to its integer",
          each("sep", [":", "=", "-", "/"]),
          lambda s, sep: {k: int(v) for k, v in (item.split(sep) for item in s.split(","))}, pairs_text),
    Shape("pair_total_{sep}", "parsing", "s", "takes a string s like 'ann{sep}3,bob{sep}5'",
          "returns the sum of the integers in it", each("sep", [":", "=", "-", "/"]),
          lambda s, sep: sum(int(item.split(sep)[1]) for item in s.split(",")), pairs_text),
    Shape("upper_fields_{sep}", "parsing", "s", S,
          "returns a list of the fields of s (split on '{sep}') in upper case",
          each("sep", [",", ";", "|", "/", ":"]), lambda s, sep: [f.upper() for f in s.split(sep)],
          fields_text),
    Shape("count_fields_{sep}", "parsing", "s", S,
          "returns how many fields s has when it is split on '{sep}'",
          each("sep", [",", ";", "|", "/", ":"]), lambda s, sep: len(s.split(sep)), fields_text),
    Shape("numbers_after_{c}", "parsing", "s", S,
          "returns a list of the integers written right after a '{c}' in s, in order",
          each("c", "#@$%&"),
          lambda s, c: [int(w[1:]) for w in s.split() if w.startswith(c) and w[1:].isdigit()],
          tagged_text),
    Shape("csv_column_{i}", "parsing", "s", "takes a string s of lines, each three integers "
          "separated by commas", "returns a list of the integers in column {i} (counting from 1)",
          each("i", range(1, 4)), lambda s, i: [int(line.split(",")[i - 1]) for line in s.split("\n")],
          csv_lines, unseen=True),
    # --- small algorithms -------------------------------------------------------------
    Shape("top_{k}_largest", "algorithms", "xs", L,
          "returns the {k} largest numbers of xs in descending order",
          each("k", range(1, 4)), lambda xs, k: sorted(xs, reverse=True)[:k], ints),
    Shape("kth_smallest_{k}", "algorithms", "xs", L,
          "returns the {k}-th smallest number of xs (counting from 1, duplicates included)",
          each("k", range(1, 4)), lambda xs, k: sorted(xs)[k - 1], ints),
    Shape("k_smallest_{k}", "algorithms", "xs", L,
          "returns the {k} smallest numbers of xs in ascending order",
          each("k", range(1, 4)), lambda xs, k: sorted(xs)[:k], ints),
    Shape("window_max_{k}", "algorithms", "xs", L,
          "returns a list of the largest of every {k} consecutive numbers of xs, in order",
          each("k", range(2, 5)), lambda xs, k: [max(xs[i:i + k]) for i in range(len(xs) - k + 1)],
          ints),
    Shape("longest_run_of_{k}", "algorithms", "xs", L,
          "returns the length of the longest run of consecutive items equal to {k} in xs",
          each("k", range(0, 4)), lambda xs, k: _runs(xs, k), small_ints),
    Shape("window_sums_{k}", "algorithms", "xs", L,
          "returns a list of the sums of every {k} consecutive numbers of xs, in order",
          each("k", range(2, 5)), lambda xs, k: [sum(xs[i:i + k]) for i in range(len(xs) - k + 1)], ints),
    Shape("pairs_summing_to_{k}", "algorithms", "xs", L,
          "returns how many pairs of positions i < j have xs[i] + xs[j] equal to {k}",
          each("k", range(0, 16)),
          lambda xs, k: sum(xs[i] + xs[j] == k for i in range(len(xs)) for j in range(i + 1, len(xs))),
          ints, unseen=True),
]
