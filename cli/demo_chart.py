"""`hcp demo`'s chart: one panel per specialist, one line per measure, by generation.

Measures (the production adapter of each generation, 0 = the base model): the held-out
contract reward under the final contract, the held-out pass rate, the pass rate on the
evaluation set no gate saw, and the check credit on the three probe sets (the general
set, the unseen templates, the retention set). Crosses: every gated successor's held-out
reward, promoted or not. With several seeds (``hcp demo --seeds``, cli/demo_seeds.py),
``seeds_chart`` draws one panel per specialist and measure, one line per seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cli.demo_shapes import DemoReport

MEASURES = (  # (label, how to read the series from a specialist's report)
    ("held-out reward", lambda d: d.get("production_by_generation")),
    ("held-out pass rate", lambda d: d.get("pass_rate_by_generation")),
    ("evaluation set pass rate", lambda d: (d.get("evaluation") or {}).get("pass_rate_by_generation")),
    ("general set credit", lambda d: ((d.get("probes_by_generation") or {}).get("general") or {})
     .get("credit_by_generation")),
    ("unseen templates credit", lambda d: ((d.get("probes_by_generation") or {})
                                           .get("unseen_templates") or {}).get("credit_by_generation")),
    ("retention credit", lambda d: ((d.get("probes_by_generation") or {}).get("retention") or {})
     .get("credit_by_generation")),
)
# What the seeds' chart shows, one panel each: the gate's held-out set, the fresh set no
# gate saw, and the two sets of what a successor was not trained on.
SEED_PANELS = ("held-out pass rate", "evaluation set pass rate", "unseen templates credit",
               "retention credit")


def series(reports: Sequence[DemoReport], specialist: str) -> dict[str, list[list[float]]]:
    """Measure -> one series per report (only measures every report has, fully)."""
    found: dict[str, list[list[float]]] = {}
    for label, read in MEASURES:
        values = [read(r["specialists"].get(specialist) or {}) for r in reports]
        if values and all(v and all(x is not None for x in v) for v in values):
            found[label] = [[float(x) for x in v or ()] for v in values]
    return found


def chart(report: DemoReport, path: Path, reports: Sequence[DemoReport] | None = None,
          title: str | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = reports or [report]
    names = [s for s, d in report["specialists"].items() if d]
    fig, axes = plt.subplots(1, len(names), figsize=(6.2 * len(names), 4.4), squeeze=False)
    for ax, specialist in zip(axes[0], names, strict=True):
        for label, values in series(runs, specialist).items():
            xs = range(len(values[0]))
            mean = [sum(col) / len(col) for col in zip(*values, strict=True)]
            line = ax.plot(xs, mean, marker="o", label=label)[0]
            if len(values) > 1:
                low = [min(col) for col in zip(*values, strict=True)]
                high = [max(col) for col in zip(*values, strict=True)]
                ax.fill_between(xs, low, high, color=line.get_color(), alpha=0.18)
        if len(runs) == 1:
            candidates = report["specialists"][specialist].get("candidate_by_generation") or []
            ax.scatter(range(1, len(candidates) + 1), candidates, marker="x", color="grey",
                       label="gated successor (promoted or not)")
        if report.get("v2_after"):
            ax.axvline(report["v2_after"] + 0.5, color="grey", linestyle=":", label="contract v2")
        ax.set_title(specialist)
        ax.set_xlabel("generation (0 = base model)")
        ax.set_xticks(range(max((len(v[0]) for v in series(runs, specialist).values()), default=1)))
        ax.set_ylim(0, 1.02)
        ax.legend(fontsize=7, loc="lower right")
    spread = f", {len(runs)} seeds (mean, band min-max)" if len(runs) > 1 else ""
    fig.suptitle(title or f"hcp demo: {report['model']} by generation{spread}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def seeds_chart(reports: Sequence[DemoReport], path: Path, title: str | None = None) -> None:
    """One row per specialist, one panel per measure of ``SEED_PANELS``, one line per seed
    (its production adapter by generation) and their mean in black."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [s for s, d in reports[0]["specialists"].items() if d]
    fig, axes = plt.subplots(len(names), len(SEED_PANELS), figsize=(4.2 * len(SEED_PANELS),
                             3.4 * len(names)), squeeze=False)
    for row, specialist in zip(axes, names, strict=True):
        found = series(reports, specialist)
        for ax, label in zip(row, SEED_PANELS, strict=True):
            values = found.get(label) or []
            for report, line in zip(reports, values, strict=True):
                ax.plot(range(len(line)), line, marker="o", alpha=0.7,
                        label=f"seed {report['config']['seed']}")
            if values:
                mean = [sum(col) / len(col) for col in zip(*values, strict=True)]
                ax.plot(range(len(mean)), mean, color="black", linewidth=2, label="mean")
                ax.set_xticks(range(len(mean)))
            ax.set_title(f"{specialist}: {label}", fontsize=9)
            ax.set_xlabel("generation (0 = base model)", fontsize=8)
            ax.set_ylim(0, 1.02)
            ax.legend(fontsize=6, loc="lower right")
    fig.suptitle(title or f"hcp demo: {reports[0]['model']} by generation, "
                 f"{len(reports)} seeds (one line each)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
