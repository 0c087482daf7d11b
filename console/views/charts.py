"""Chart specifications the pages hand to Chart.js (``static/console.js`` draws them).

Every chart is also rendered as a table next to it, from the same specification, so the
figures can be read without a canvas (screen readers, tests, copy and paste).
"""

from __future__ import annotations

from typing import Any

from evaluators.stats import BINS


def bin_labels(bins: int = BINS) -> list[str]:
    """Labels of the equal-width score bins over [0, 1]."""
    return [f"{i / bins:.1f}–{(i + 1) / bins:.1f}" for i in range(bins)]


def bar_chart(label: str, datasets: list[dict[str, Any]], x_title: str = "score",
              y_title: str = "rewards", labels: list[str] | None = None,
              stacked: bool = False) -> dict[str, Any]:
    """A histogram over the score bins (or ``labels``), one bar series per dataset."""
    return {"type": "bar", "label": label, "x_title": x_title, "y_title": y_title,
            "labels": labels or bin_labels(), "stacked": stacked, "datasets": datasets}


def line_chart(label: str, x: list[Any], datasets: list[dict[str, Any]], x_title: str,
               y_title: str) -> dict[str, Any]:
    return {"type": "line", "label": label, "x_title": x_title, "y_title": y_title,
            "labels": x, "stacked": False, "datasets": datasets}
