"""Chart specifications the pages hand to Chart.js (``static/console.js`` draws them).

Every chart is also rendered as a table next to it, from the same specification, so the
figures can be read without a canvas (screen readers, tests, copy and paste).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypedDict

from evaluators.stats import BINS


class Dataset(TypedDict):
    label: str
    data: Sequence[float]  # one figure per label


class Chart(TypedDict):
    type: Literal["bar", "line"]
    label: str
    x_title: str
    y_title: str
    labels: Sequence[str | int]  # the x axis: score bins, steps
    stacked: bool
    datasets: list[Dataset]


def bin_labels(bins: int = BINS) -> list[str]:
    """Labels of the equal-width score bins over [0, 1]."""
    return [f"{i / bins:.1f}–{(i + 1) / bins:.1f}" for i in range(bins)]


def bar_chart(label: str, datasets: list[Dataset], x_title: str = "score",
              y_title: str = "rewards", labels: list[str] | None = None,
              stacked: bool = False) -> Chart:
    """A histogram over the score bins (or ``labels``), one bar series per dataset."""
    return {"type": "bar", "label": label, "x_title": x_title, "y_title": y_title,
            "labels": labels or bin_labels(), "stacked": stacked, "datasets": datasets}


def line_chart(label: str, x: Sequence[str | int], datasets: list[Dataset], x_title: str,
               y_title: str) -> Chart:
    return {"type": "line", "label": label, "x_title": x_title, "y_title": y_title,
            "labels": x, "stacked": False, "datasets": datasets}
