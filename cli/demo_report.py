"""`hcp demo`'s report: a line per trained version, a table, the JSON report and the chart.

Held-out rewards by generation come from the gate records (what decided promotion, under
the contract in force then) and, for the chart, from the same answers judged again under
the final contract (``rejudge``): contract v2 changes the scale, and a chart that mixed
scales would show the contract moving, not the model. The base is "generation 0": the
parent answers of the first gate.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.table import Table

from trainer.gate.stats import paired_bootstrap

LEVEL, RESAMPLES = 0.95, 10_000


@dataclass(frozen=True)
class Generation:
    generation: int
    specialist: str
    version: int
    adapter_id: str
    parent: str  # "base" or the parent's version number
    contract_version: int
    examples: int  # selected and trained on
    parent_reward: float
    successor_reward: float
    interval: dict[str, Any] | None
    promoted: bool
    reason: str
    seconds: float
    train_tokens_per_s: float

    def line(self) -> str:
        low_high = (f"[{self.interval['low']:+.3f}, {self.interval['high']:+.3f}]"
                    if self.interval else "-")
        verdict = "[green]promoted[/]" if self.promoted else "[yellow]rejected[/]"
        return (f"  {self.specialist}@{self.version} (parent {self.parent}, contract "
                f"v{self.contract_version}, {self.examples} examples): held-out "
                f"{self.parent_reward:.3f} -> {self.successor_reward:.3f}, 95% interval "
                f"{low_high}: {verdict} ({self.seconds:.0f} s)")


def adapter_row(container: Any, adapter_id: str, gen: int, seconds: float) -> Generation:
    adapter = container.registry.adapter(adapter_id)
    gate = adapter.metrics.get("gate", {})
    rewards = gate.get("comparison", {}).get("rollout_reward", {})
    parent = ("base" if adapter.parent_adapter_id is None
              else str(container.registry.adapter(adapter.parent_adapter_id).version))
    training = adapter.metrics.get("training", {})
    return Generation(
        gen, adapter.specialist, adapter.version, adapter.adapter_id, parent,
        max(c.version for c in adapter.contract_versions), int(training.get("examples_used", 0)),
        float(rewards.get("parent", 0.0)), float(rewards.get("successor", 0.0)),
        gate.get("interval"), adapter.status == "promoted", str(gate.get("reason", "")), seconds,
        float(training.get("tokens_per_s", 0.0)))


def table(rows: list[Generation]) -> Table:
    out = Table("gen", "specialist", "version", "parent", "contract", "examples",
                "held-out parent -> successor", "95% interval", "promoted")
    for r in rows:
        interval = (f"[{r.interval['low']:+.3f}, {r.interval['high']:+.3f}]" if r.interval else "-")
        out.add_row(str(r.generation), r.specialist, str(r.version), r.parent,
                    f"v{r.contract_version}", str(r.examples),
                    f"{r.parent_reward:.3f} -> {r.successor_reward:.3f}", interval,
                    "yes" if r.promoted else "no")
    return out


def rejudge(container: Any, rows: list[Generation], specialist: str) -> dict[str, Any]:
    """Held-out reward per generation of the production adapter (and of each candidate),
    all judged under the contract now in force, and the last production vs the base."""
    from harness.gate import TasksRolloutHarness
    from trainer.datasets.manifest import HELD_OUT
    from trainer.gate.rollout import RolloutTarget, latest, measure

    mine = [r for r in rows if r.specialist == specialist]
    if not mine:
        return {}
    last = container.registry.adapter(mine[-1].adapter_id)
    run = container.runs.get(last.training_run_id)
    held = container.manifests.rebuild(run.manifest_id).split_examples(HELD_OUT)
    gate = last.metrics["gate"]
    cases = container.runner.gate.rollout_cases(latest(held, int(gate["rollouts"]["successor"]["n"])))
    harness = TasksRolloutHarness(RolloutTarget("", None, 1))

    def judged(record: dict[str, Any]) -> list[float]:
        answers = dict(zip(record["cases"], record["answers"], strict=True))
        texts = [answers[c.subject.id] for c in cases]
        return list(measure(harness, cases, texts=texts).rewards)

    first = container.registry.adapter(mine[0].adapter_id).metrics["gate"]["rollouts"]
    base = judged(first["parent"])
    production, candidates, current = [sum(base) / len(base)], [], base
    for r in mine:
        record = container.registry.adapter(r.adapter_id).metrics["gate"]["rollouts"]["successor"]
        rewards = judged(record)
        candidates.append(sum(rewards) / len(rewards))
        current = rewards if r.promoted else current
        production.append(sum(current) / len(current))
    versus = paired_bootstrap(current, base, level=LEVEL, resamples=RESAMPLES, seed=0)
    return {"production_by_generation": production, "candidate_by_generation": candidates,
            "last_vs_base": versus.to_dict(), "n": len(cases),
            "contract": f"{cases[0].contract.document.contract.name}"}


def chart(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for specialist, data in report["specialists"].items():
        prod = data["production_by_generation"]
        line = ax.plot(range(len(prod)), prod, marker="o", label=f"{specialist}: production")[0]
        ax.scatter(range(1, len(prod)), data["candidate_by_generation"], marker="x",
                   color=line.get_color(), label=f"{specialist}: gated successor (promoted or not)")
    if report.get("v2_after"):
        ax.axvline(report["v2_after"] + 0.5, color="grey", linestyle=":", label="contract v2 published")
    ax.set_xticks(range(len(prod)))
    ax.set_xlabel("generation (0 = base model)")
    ax.set_ylabel("held-out contract reward (final contract)")
    ax.set_title(f"hcp demo: {report['model']}, held-out reward by generation")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def finish_report(container: Any, demo: Any, base_model: str) -> dict[str, Any]:
    cfg, console = demo.config, demo.console
    console.rule("[bold]the generations")
    console.print(table(demo.generations))
    out_dir = cfg.out_dir or container.settings.data_dir / "demo"
    out_dir.mkdir(parents=True, exist_ok=True)
    specialists = {s: rejudge(container, demo.generations, s) for s in cfg.specialists}
    for s, data in specialists.items():
        if data:
            v = data["last_vs_base"]
            console.print(f"  {s}: held-out reward by generation "
                          f"{' -> '.join(f'{x:.3f}' for x in data['production_by_generation'])}; "
                          f"last production vs base {v['mean']:+.3f}, 95% interval "
                          f"[{v['low']:+.3f}, {v['high']:+.3f}] over {v['n']} tasks")
    verify = container.store.verify()
    report = {"model": base_model, "config": {**asdict(cfg), "out_dir": str(out_dir)},
              "v2_after": cfg.v2_after, "generations": [asdict(g) for g in demo.generations],
              "specialists": specialists, "timings_s": {k: round(v, 1) for k, v in demo.timings.items()},
              "chain_intact": verify.intact, "events": verify.checked}
    (out_dir / "demo-report.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    if any(specialists.values()):
        chart(report, out_dir / "demo-chart.png")
    console.print(f"  hash chain {'intact' if verify.intact else 'BROKEN'} over {verify.checked} events; "
                  f"report {out_dir / 'demo-report.json'}, chart {out_dir / 'demo-chart.png'}; "
                  f"{demo.timings.get('total', 0):.0f} s in all")
    return report
