"""The learned router's gate: routing accuracy on held-out turns, with its interval, and
against the router that serves now on the same turns. Pure.

Each held-out turn is right or wrong for both routers, so the difference is paired (as
an adapter's gate pairs successor and parent): a percentile bootstrap of the mean
difference (``trainer.gate.stats``). A version is promoted when it is not worse than the
incumbent by more than ``margin`` with 95% confidence (the interval's lower bound above
``-margin``) on at least ``min_held_out`` turns; its own accuracy carries a Wilson
interval so a reader sees how sure that figure is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from trainer.gate.stats import paired_bootstrap

Z95 = 1.959964


@dataclass(frozen=True)
class RouterGate:
    n: int
    accuracy: float
    accuracy_interval: tuple[float, float]  # Wilson, 95%
    incumbent: str  # "keywords", or the version serving now ("serve@2")
    incumbent_accuracy: float
    # the paired bootstrap interval of accuracy - incumbent's (``IntervalJson``); empty when
    # there were too few held-out turns to measure it
    difference: Mapping[str, object]
    margin: float
    min_held_out: int
    promote: bool
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "accuracy_interval": list(self.accuracy_interval)}


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (round((centre - half) / (1 + z * z / n), 6), round((centre + half) / (1 + z * z / n), 6))


def judge(predicted: Sequence[str], incumbent_predicted: Sequence[str], truth: Sequence[str],
          incumbent: str, margin: float, min_held_out: int) -> RouterGate:
    """The gate's record for a candidate router (see the module's docstring)."""
    right = [float(p == t) for p, t in zip(predicted, truth, strict=True)]
    theirs = [float(p == t) for p, t in zip(incumbent_predicted, truth, strict=True)]
    n = len(right)
    if n < min_held_out:
        return RouterGate(n, _mean(right), wilson(int(sum(right)), n), incumbent, _mean(theirs), {},
                          margin, min_held_out, False,
                          f"{n} held-out turns, fewer than the {min_held_out} the gate needs")
    interval = paired_bootstrap(right, theirs)
    promote = interval.low > -margin
    relation = "not worse than" if promote else "may be worse than"
    reason = (f"accuracy {_mean(right):.3f} vs {incumbent} {_mean(theirs):.3f} on {n} held-out turns: "
              f"difference {interval.mean:+.3f}, 95% interval [{interval.low:+.3f}, {interval.high:+.3f}]"
              f" ({relation} {incumbent} by more than {margin:g})")
    return RouterGate(n, _mean(right), wilson(int(sum(right)), n), incumbent, _mean(theirs),
                      interval.to_dict(), margin, min_held_out, promote, reason)


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 6) if values else 0.0
