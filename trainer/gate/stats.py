"""Paired statistics for the gate: successor and parent on the same held-out prompts.

Both models answer the same held-out cases, so each case gives one difference (successor
minus parent) and case difficulty cancels. Pure Python, seeded, so a decision can be
recomputed from the per-case rewards the gate record keeps.

- ``paired_bootstrap``: the percentile interval of the mean difference, resampling cases
  with replacement. Works on any reward scale.
- ``sign_test``: only cases where the two differ carry information; under "no difference"
  each is a fair coin, so the exact two-sided p-value is a binomial tail. With pass/fail
  rewards this is McNemar's exact test.
- ``non_inferiority``: the one-sided lower bound of the mean difference at a level, and
  what a check "not worse by more than the margin unless that bound clears it" can see:
  its chance of stopping a successor that truly loses the margin (the level, by
  construction) and its chance of letting through one that truly lost nothing, from the
  standard error it measured (normal approximation). ``cases_for`` sizes a set for both.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TypedDict

DEFAULT_RESAMPLES = 10_000


class IntervalJson(TypedDict):
    """``Interval.to_dict``: as gate records and demo reports store it."""

    mean: float
    low: float
    high: float
    level: float
    n: int
    resamples: int
    seed: int


class NonInferiorityJson(TypedDict):
    """``NonInferiority.to_dict``."""

    mean: float
    lower: float
    level: float
    margin: float
    n: int
    sd: float
    power: float
    pass_if_equal: float
    resamples: int
    seed: int
    ok: bool


class SignTestJson(TypedDict):
    """``SignTest.to_dict``."""

    wins: int
    losses: int
    ties: int
    p_value: float


@dataclass(frozen=True)
class Interval:
    mean: float  # mean paired difference, successor - parent
    low: float
    high: float
    level: float  # e.g. 0.95
    n: int  # paired cases
    resamples: int
    seed: int

    def to_dict(self) -> IntervalJson:
        return {"mean": self.mean, "low": self.low, "high": self.high, "level": self.level,
                "n": self.n, "resamples": self.resamples, "seed": self.seed}


def _check(new: Sequence[float], old: Sequence[float]) -> None:
    if len(new) != len(old) or not new:
        raise ValueError("paired samples must be non-empty and of equal length")


def paired_bootstrap(new: Sequence[float], old: Sequence[float], *, level: float = 0.95,
                     resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> Interval:
    """Percentile bootstrap interval of mean(new - old) at ``level``."""
    diffs = _diffs(new, old)
    means = _resampled_means(diffs, resamples, seed)
    tail = (1 - level) / 2
    low = means[int(math.floor(tail * resamples))]
    high = means[min(resamples - 1, int(math.ceil((1 - tail) * resamples)) - 1)]
    return Interval(sum(diffs) / len(diffs), low, high, level, len(diffs), resamples, seed)


def _diffs(new: Sequence[float], old: Sequence[float]) -> list[float]:
    _check(new, old)
    return [a - b for a, b in zip(new, old, strict=True)]


def _resampled_means(diffs: Sequence[float], resamples: int, seed: int) -> list[float]:
    n = len(diffs)
    rng = random.Random(seed)  # noqa: S311 (a reproducible statistic, not a secret)
    return sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))


@dataclass(frozen=True)
class NonInferiority:
    """Successor minus parent on one set, against ``-margin`` at a one-sided ``level``."""

    mean: float
    lower: float  # one-sided lower bound at ``level`` (percentile bootstrap)
    level: float  # e.g. 0.8: a true loss of the margin is stopped this often
    margin: float
    n: int
    sd: float  # of the paired differences
    power: float  # chance of stopping a successor that truly loses ``margin``
    pass_if_equal: float  # chance of letting through one that truly lost nothing
    resamples: int
    seed: int

    @property
    def ok(self) -> bool:
        return self.lower >= -self.margin

    def to_dict(self) -> NonInferiorityJson:
        return {"mean": self.mean, "lower": self.lower, "level": self.level,
                "margin": self.margin, "n": self.n, "sd": self.sd, "power": self.power,
                "pass_if_equal": self.pass_if_equal, "resamples": self.resamples,
                "seed": self.seed, "ok": self.ok}


def non_inferiority(new: Sequence[float], old: Sequence[float], *, margin: float, level: float,
                    resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> NonInferiority:
    """Is ``new`` no worse than ``old`` by more than ``margin``? It is when the one-sided
    lower bound of mean(new - old) at ``level`` lies at or above ``-margin``.

    A successor that truly loses exactly ``margin`` has its bound below ``-margin`` with
    probability ``level``: that is the check's power at the margin, whatever the set's size.
    The size decides how often a successor that lost nothing passes: ``pass_if_equal``,
    ``Phi(margin / se - z_level)`` with the standard error measured here.
    """
    diffs = _diffs(new, old)
    n = len(diffs)
    means = _resampled_means(diffs, resamples, seed)
    lower = means[int(math.floor((1 - level) * resamples))]
    mean = sum(diffs) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1)) if n > 1 else 0.0
    normal = NormalDist()
    z = normal.inv_cdf(level)
    se = sd / math.sqrt(n)
    pass_if_equal = normal.cdf(margin / se - z) if se > 0 else 1.0
    return NonInferiority(mean, lower, level, margin, n, sd, level, pass_if_equal, resamples, seed)


def power_of_gain(sd: float, n: int, gain: float, level: float) -> float:
    """Chance that a two-sided ``level`` interval of a mean difference lies above 0 when the
    true difference is ``gain`` (normal approximation, ``sd`` of the paired differences)."""
    if n < 1:
        return 0.0
    se = sd / math.sqrt(n)
    normal = NormalDist()
    if se == 0:
        return 1.0 if gain > 0 else 0.0
    return normal.cdf(gain / se - normal.inv_cdf((1 + level) / 2))


def cases_for(sd: float, margin: float, level: float, pass_if_equal: float) -> int:
    """Cases a set needs so that a non-inferiority check at ``level`` lets a successor that
    lost nothing through with probability ``pass_if_equal`` (``sd``: of the paired
    differences, e.g. measured on an earlier gate)."""
    normal = NormalDist()
    z = normal.inv_cdf(level) + normal.inv_cdf(pass_if_equal)
    return max(1, math.ceil((z * sd / margin) ** 2))


@dataclass(frozen=True)
class SignTest:
    wins: int  # cases where the successor scored higher
    losses: int  # cases where the parent scored higher
    ties: int
    p_value: float  # exact, two-sided

    def to_dict(self) -> SignTestJson:
        return {"wins": self.wins, "losses": self.losses, "ties": self.ties,
                "p_value": self.p_value}


def sign_test(new: Sequence[float], old: Sequence[float]) -> SignTest:
    """Exact two-sided sign test of the paired differences (McNemar's for pass/fail)."""
    _check(new, old)
    wins = sum(1 for a, b in zip(new, old, strict=True) if a > b)
    losses = sum(1 for a, b in zip(new, old, strict=True) if a < b)
    n, low = wins + losses, min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(low + 1)) / 2**n if n else 1.0
    return SignTest(wins, losses, len(new) - n, min(1.0, 2 * tail))
