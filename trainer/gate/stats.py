"""Paired statistics for the gate: successor and parent on the same held-out prompts.

Both models answer the same held-out cases, so each case gives one difference (successor
minus parent) and case difficulty cancels. Pure Python, seeded, so a decision can be
recomputed from the per-case rewards the gate record keeps.

- ``paired_bootstrap``: the percentile interval of the mean difference, resampling cases
  with replacement. Works on any reward scale.
- ``sign_test``: only cases where the two differ carry information; under "no difference"
  each is a fair coin, so the exact two-sided p-value is a binomial tail. With pass/fail
  rewards this is McNemar's exact test.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

DEFAULT_RESAMPLES = 10_000


@dataclass(frozen=True)
class Interval:
    mean: float  # mean paired difference, successor - parent
    low: float
    high: float
    level: float  # e.g. 0.95
    n: int  # paired cases
    resamples: int
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check(new: Sequence[float], old: Sequence[float]) -> None:
    if len(new) != len(old) or not new:
        raise ValueError("paired samples must be non-empty and of equal length")


def paired_bootstrap(new: Sequence[float], old: Sequence[float], *, level: float = 0.95,
                     resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> Interval:
    """Percentile bootstrap interval of mean(new - old) at ``level``."""
    _check(new, old)
    diffs = [a - b for a, b in zip(new, old, strict=True)]
    n = len(diffs)
    rng = random.Random(seed)  # noqa: S311 (a reproducible statistic, not a secret)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    tail = (1 - level) / 2
    low = means[int(math.floor(tail * resamples))]
    high = means[min(resamples - 1, int(math.ceil((1 - tail) * resamples)) - 1)]
    return Interval(sum(diffs) / n, low, high, level, n, resamples, seed)


@dataclass(frozen=True)
class SignTest:
    wins: int  # cases where the successor scored higher
    losses: int  # cases where the parent scored higher
    ties: int
    p_value: float  # exact, two-sided

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def sign_test(new: Sequence[float], old: Sequence[float]) -> SignTest:
    """Exact two-sided sign test of the paired differences (McNemar's for pass/fail)."""
    _check(new, old)
    wins = sum(1 for a, b in zip(new, old, strict=True) if a > b)
    losses = sum(1 for a, b in zip(new, old, strict=True) if a < b)
    n, low = wins + losses, min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(low + 1)) / 2**n if n else 1.0
    return SignTest(wins, losses, len(new) - n, min(1.0, 2 * tail))
