"""`hcp demo --seeds`: the loop once per seed, and the spread of each generation's gain.

A seed draws the train tasks and seeds sampling and each run's initialisation and batch
order; the held-out and evaluation sets are the same for every seed, so the runs are
measured alike. Each seed runs as its own `hcp demo --seed N` process with a data
directory of its own (``<data_dir>/demo-seeds/seed-N``: a log, a registry and adapters
that start empty) and the models directory shared, so the base model is fetched and
converted once. Each run's report lies in ``<out>/seed-N``; the spread goes to
``<out>/seeds-report.json`` and ``<out>/seeds-chart.png`` (each line the mean across
seeds, its band min to max), ``<out>/seeds-panels.png`` (one line per seed: the held-out,
fresh, unseen-template and retention measures) and, in the report, whether a generation
beats the one before on the fresh set over the seeds and what was lost on the probe
sets (``cli.demo_compound``).

A generation's gain is its production adapter's figure minus the previous generation's
(``step``) and minus the base's (``vs_base``), per measure of the chart (held-out reward
under the final contract, held-out pass rate, evaluation-set pass rate, the probe sets'
credit).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, cast

import typer

from cli.demo_run import DemoConfig
from cli.demo_shapes import (
    DemoConfigJson,
    DemoReport,
    MeasureSpread,
    SeedsSpecialist,
    SeedsSummary,
    Spread,
)
from cli.demo_state import PIPED_DEMO_WIDTH

MAX_SEEDS = 32


def parse_seeds(text: str) -> list[int]:
    """``0,1,2`` (a list) or ``3`` (a count: seeds 0, 1, 2)."""
    try:
        if "," not in text:
            count = int(text)
            if not 1 <= count <= MAX_SEEDS:
                raise ValueError
            return list(range(count))
        seeds = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise typer.BadParameter(f"{text!r}: a count from 1 to {MAX_SEEDS} or a list such as "
                                 f"0,1,2", param_hint="--seeds") from None
    if not seeds or any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise typer.BadParameter(f"{text!r}: distinct seeds of 0 or more", param_hint="--seeds")
    return seeds


def run_seeds(config: DemoConfig, seeds: list[int]) -> int:
    """Run the loop once per seed and write the spread; 1 when a run failed."""
    from rich.console import Console

    from hcp.settings import get_settings

    settings = get_settings()
    out = config.out_dir or settings.data_dir / "demo"
    homes = {seed: settings.data_dir / "demo-seeds" / f"seed-{seed}" for seed in seeds}
    used = [str(home) for home in homes.values() if home.exists()]
    if used:
        raise typer.BadParameter(f"already used: {', '.join(used)} (a seed's run starts from an "
                                 f"empty data directory; remove them or set another HCP_DATA_DIR)",
                                 param_hint="--seeds")
    console = Console()
    console = console if console.is_terminal else Console(width=PIPED_DEMO_WIDTH)
    reports: list[DemoReport] = []
    failed: list[int] = []
    seconds: dict[int, float] = {}
    for seed in seeds:
        console.rule(f"[bold]seed {seed} ({seeds.index(seed) + 1} of {len(seeds)})")
        started = time.perf_counter()
        status = run_one(config, seed, homes[seed], out / f"seed-{seed}",
                         settings.resolved_models_dir)
        seconds[seed] = round(time.perf_counter() - started, 1)
        report_file = out / f"seed-{seed}" / "demo-report.json"
        if status != 0 or not report_file.exists():
            console.print(f"[red]seed {seed}: the run failed (exit {status})[/]")
            failed.append(seed)
            continue
        reports.append(json.loads(report_file.read_text()))
    if reports:
        summary = summarise(config, reports, failed, seconds)
        (out / "seeds-report.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
        from cli.demo_chart import chart, seeds_chart

        chart(reports[0], out / "seeds-chart.png", reports=reports)
        seeds_chart(reports, out / "seeds-panels.png")
        say(console, summary)
        console.print(f"  report {out / 'seeds-report.json'}, chart {out / 'seeds-chart.png'}")
    return 1 if failed or not reports else 0


def run_one(config: DemoConfig, seed: int, home: Path, out: Path, models: Path) -> int:
    """`hcp demo --seed SEED` in a process of its own, on ``home`` (SQLite, its own store)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("HCP_DATABASE_URL", "HCP_ARTIFACT_DIR")}
    home.mkdir(parents=True)
    env.update(HCP_DATA_DIR=str(home), HCP_MODELS_DIR=str(models))
    args = ["--model", config.model, "--specialists", ",".join(config.specialists),
            "--generations", str(config.generations), "--train-tasks", str(config.train_tasks),
            "--held-out", str(config.held_out), "--eval-tasks", str(config.eval_tasks),
            "--k", str(config.k), "--temperature", str(config.temperature), "--seed", str(seed),
            "--v2-after", str(config.v2_after), "--out", str(out),
            "--min-examples", str(config.min_examples),
            "--sample-budget", str(config.sample_budget)]
    if config.objective:
        args += ["--objective", config.objective]
    if config.device:
        args += ["--device", config.device]
    return subprocess.run([sys.executable, "-m", "cli.main", "demo", *args], env=env,  # noqa: S603
                          check=False).returncode


def spread(values: list[float]) -> Spread:
    return {"mean": statistics.fmean(values),
            "sd": statistics.stdev(values) if len(values) > 1 else 0.0,
            "min": min(values), "max": max(values), "n": len(values)}


def summarise(config: DemoConfig, reports: list[DemoReport], failed: list[int],
              seconds: dict[int, float]) -> SeedsSummary:
    """Per specialist and measure: each generation's figure, step gain and gain over the
    base, as mean, sample standard deviation, min and max across seeds; and how many
    seeds promoted at each generation."""
    from cli.demo_chart import series
    from cli.demo_compound import compounding, losses

    specialists: dict[str, SeedsSpecialist] = {}
    for specialist in config.specialists:
        measures: dict[str, MeasureSpread] = {}
        for label, runs in series(reports, specialist).items():
            gens = range(1, len(runs[0]))
            measures[label] = {
                "by_generation": [spread([r[g] for r in runs]) for g in range(len(runs[0]))],
                "step": [spread([r[g] - r[g - 1] for r in runs]) for g in gens],
                "vs_base": [spread([r[g] - r[0] for r in runs]) for g in gens]}
        promoted = [sum(1 for r in reports for row in r["generations"]
                        if row["specialist"] == specialist and row["generation"] == g
                        and row["promoted"]) for g in range(1, config.generations + 1)]
        specialists[specialist] = {"measures": measures, "promoted_by_generation": promoted,
                                   "compounding": compounding(reports, specialist),
                                   "losses": losses(reports, specialist, probe_margin(reports))}
    return {"seeds": [r["config"]["seed"] for r in reports], "failed_seeds": failed,
            "config": cast(DemoConfigJson, {**asdict(config), "seed": None,
                                            "out_dir": str(config.out_dir)}),
            "model": reports[0]["model"], "specialists": specialists,
            "seconds_by_seed": seconds,
            "environment": reports[0].get("environment", {})}


def probe_margin(reports: list[DemoReport]) -> float:
    """The gates' non-inferiority margin, as their records give it (0.05 when none does)."""
    for report in reports:
        for row in report.get("generations") or []:
            for probe in (row.get("probes") or {}).values():
                margin = probe.get("margin") if isinstance(probe, dict) else None
                if margin is not None:
                    return float(margin)
    return 0.05


def say(console: Any, summary: SeedsSummary) -> None:
    from rich.markup import escape
    from rich.table import Table

    n = len(summary["seeds"])
    for specialist, data in summary["specialists"].items():
        measures = data["measures"]
        gens = len(data["promoted_by_generation"])
        title = (f"{specialist}: each generation's gain over the one before, mean ± sd "
                 f"[min, max] over {n} seeds")
        table = Table(title=escape(title), title_justify="left")
        table.add_column("measure")
        for g in range(1, gens + 1):
            table.add_column(f"gen {g}")
        table.add_column(f"gen {gens} vs base")
        for label, m in measures.items():
            table.add_row(label, *(escape(cell(s)) for s in m["step"]), escape(cell(m["vs_base"][-1])))
        table.add_row("promoted", *(f"{k} of {n}" for k in data["promoted_by_generation"]), "")
        console.print(table)
        for row in data.get("compounding") or []:
            i = row["interval"]
            console.print(f"  {specialist}: generation {row['generation']} over {row['versus']} on the "
                          f"fresh set ({row['n_tasks']} tasks, mean over {row['seeds']} seeds) "
                          f"{row['mean']:+.3f}, 95% interval [{i['low']:+.3f}, {i['high']:+.3f}]; "
                          f"per seed {', '.join(f'{x:+.3f}' for x in row['per_seed'])}")
        for name, loss in (data.get("losses") or {}).items():
            console.print(f"  {specialist}: {name} worst step {loss['worst_step']:+.3f}, worst "
                          f"against the base {loss['worst_versus_base']:+.3f} (margin {loss['margin']})")


def cell(s: Spread) -> str:
    return f"{s['mean']:+.3f} ± {s['sd']:.3f} [{s['min']:+.3f}, {s['max']:+.3f}]"
