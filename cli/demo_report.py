"""`hcp demo`'s report: a line per trained version, a table, the JSON report and the chart.

Held-out rewards by generation come from the gate records (what decided promotion, under
the contract in force then) and, for the chart, from the same answers judged again under
the final contract (``rejudge``): contract v2 changes the scale, and a chart that mixed
scales would show the contract moving, not the model. The base is "generation 0": the
parent answers of the first gate. Beside the reward: the pass rate (the checks' verdict,
no contract involved), the non-inferiority probe sets (the general set, the unseen
templates, the retention set), the gains per template group, the evaluation set no gate
saw (``demo_eval``), and each run's objective, starting point and KL from the base.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, cast

from rich.table import Table

from cli.demo_shapes import (
    DemoConfigJson,
    DemoReport,
    Evaluation,
    GenerationRow,
    GroupGain,
    ProbeRow,
    ProbeSeries,
    SpecialistReport,
)
from trainer.gate.shapes import GateJson, ProbeRecord
from trainer.gate.stats import IntervalJson, paired_bootstrap

LEVEL, RESAMPLES = 0.95, 10_000
PROBE_SETS = ("general", "unseen_templates", "retention")


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
    interval: IntervalJson | None
    promoted: bool
    reason: str
    seconds: float
    train_tokens_per_s: float
    parent_pass_rate: float | None = None
    successor_pass_rate: float | None = None
    # per probe set: successor and parent credit and pass rate, the interval, ok
    probes: dict[str, ProbeRow] = field(default_factory=dict)
    objective: str = "sft"
    init: str = "parent"
    kl_from_base: float | None = None  # per token, KL(successor || base) on its training answers
    answers_sampled: int = 0  # this generation's sampled answers for the specialist

    def line(self) -> str:
        low_high = (f"[{self.interval['low']:+.3f}, {self.interval['high']:+.3f}]"
                    if self.interval else "-")
        verdict = "[green]promoted[/]" if self.promoted else "[yellow]rejected[/]"
        passes = (f", pass {self.parent_pass_rate:.2f} -> {self.successor_pass_rate:.2f}"
                  if self.parent_pass_rate is not None and self.successor_pass_rate is not None else "")
        probes = "".join(f", {name} {p['delta']:+.3f}{'' if p['ok'] else ' (loss)'}"
                         for name, p in self.probes.items() if "delta" in p)
        kl = f", KL {self.kl_from_base:.3f}" if self.kl_from_base is not None else ""
        return (f"  {self.specialist}@{self.version} (parent {self.parent}, contract "
                f"v{self.contract_version}, {self.objective} from {self.init}, "
                f"{self.examples} examples of {self.answers_sampled} answers{kl}): held-out "
                f"{self.parent_reward:.3f} -> {self.successor_reward:.3f}{passes}, 95% interval "
                f"{low_high}{probes}: {verdict} ({self.seconds:.0f} s)")


def adapter_row(container: Any, adapter_id: str, gen: int, seconds: float,
                answers: int = 0) -> Generation:
    adapter = container.registry.adapter(adapter_id)
    gate = adapter.metrics.get("gate", {})
    rewards = gate.get("comparison", {}).get("rollout_reward", {})
    passes = gate.get("pass_rate") or {}
    parent = ("base" if adapter.parent_adapter_id is None
              else str(container.registry.adapter(adapter.parent_adapter_id).version))
    training = adapter.metrics.get("training", {})
    return Generation(
        gen, adapter.specialist, adapter.version, adapter.adapter_id, parent,
        max(c.version for c in adapter.contract_versions), int(training.get("examples_used", 0)),
        float(rewards.get("parent", 0.0)), float(rewards.get("successor", 0.0)),
        gate.get("interval"), adapter.status == "promoted", str(gate.get("reason", "")), seconds,
        float(training.get("tokens_per_s", 0.0)), passes.get("parent"), passes.get("successor"),
        probe_rows(gate), str(training.get("objective", "sft")), str(training.get("init", "parent")),
        (training.get("kl_from_base") or {}).get("reverse"), answers)


def probe_rows(gate: GateJson) -> dict[str, ProbeRow]:
    """Each probe set's figures from a gate record (``non_inferiority``)."""
    rows: dict[str, ProbeRow] = {}
    record: ProbeRecord = gate.get("non_inferiority") or {}
    for name, row in (record.get("sets") or {}).items():
        if "interval" not in row:
            continue
        check = row.get("non_inferiority")
        rows[name] = {"delta": row["delta"], "high": row["interval"]["high"],
                      "low": row["interval"]["low"], "ok": row["ok"], "n": row["n"],
                      "credit": row["mean"], "pass_rate": row["pass_rate"],
                      "lower": check.get("lower") if check else None,
                      "power": row.get("power"), "pass_if_equal": row.get("pass_if_equal"),
                      "margin": record.get("margin")}
    return rows


def table(rows: list[Generation]) -> Table:
    out = Table("gen", "specialist", "version", "parent", "contract", "examples", "KL",
                "held-out reward", "pass rate", "95% interval", "general", "unseen templates",
                "retention", "promoted")
    for r in rows:
        interval = (f"[{r.interval['low']:+.3f}, {r.interval['high']:+.3f}]" if r.interval else "-")
        passes = (f"{r.parent_pass_rate:.2f} -> {r.successor_pass_rate:.2f}"
                  if r.parent_pass_rate is not None and r.successor_pass_rate is not None else "-")
        probes = [f"{r.probes[n]['delta']:+.3f}" + ("" if r.probes[n]["ok"] else " loss")
                  if n in r.probes else "-" for n in PROBE_SETS]
        out.add_row(str(r.generation), r.specialist, str(r.version), r.parent,
                    f"v{r.contract_version}", str(r.examples),
                    f"{r.kl_from_base:.3f}" if r.kl_from_base is not None else "-",
                    f"{r.parent_reward:.3f} -> {r.successor_reward:.3f}", passes, interval, *probes,
                    "yes" if r.promoted else "no")
    return out


def rejudge(container: Any, rows: list[Generation], specialist: str) -> SpecialistReport:
    """Held-out reward and pass rate per generation of the production adapter (and of each
    candidate), judged under the contract now in force; the probe sets per generation;
    gains per template group; and the last production vs the base."""
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
    harness = TasksRolloutHarness(container.inference, RolloutTarget("", None, 1),
                                  sandbox=container.code_sandbox)  # judges given answers only

    def judged(record: Mapping[str, Any]) -> Any:
        answers = dict(zip(record["cases"], record["answers"], strict=True))
        return measure(harness, cases, texts=[answers[c.subject.id] for c in cases])

    records: list[GateJson] = [container.registry.adapter(r.adapter_id).metrics["gate"] for r in mine]
    base = judged(records[0]["rollouts"]["parent"])
    current, production, candidates = base, [base], []
    for r, record in zip(mine, records, strict=True):
        measured = judged(record["rollouts"]["successor"])
        candidates.append(measured.mean_reward)
        current = measured if r.promoted else current
        production.append(current)
    versus = paired_bootstrap(current.rewards, base.rewards, level=LEVEL, resamples=RESAMPLES, seed=0)
    return {"production_by_generation": [m.mean_reward for m in production],
            "pass_rate_by_generation": [m.pass_rate for m in production],
            "candidate_by_generation": candidates,
            "probes_by_generation": _probes_by_generation(mine, records),
            "by_group": _groups(base, current),
            "last_vs_base": versus.to_dict(), "n": len(cases),
            "contract": f"{cases[0].contract.document.contract.name}"}


def _probes_by_generation(mine: list[Generation], records: list[GateJson]) -> dict[str, ProbeSeries]:
    """Each probe set's credit and pass rate of the production adapter, generation 0 first."""
    found: dict[str, ProbeSeries] = {}
    for name in PROBE_SETS:
        found_sets = [((rec.get("non_inferiority") or ProbeRecord()).get("sets") or {}).get(name)
                      for rec in records]
        if not found_sets or any(s is None or "mean" not in s for s in found_sets):
            continue
        sets = [s for s in found_sets if s is not None]
        credit, passes = [sets[0]["mean"]["parent"]], [sets[0]["pass_rate"]["parent"]]
        for r, s in zip(mine, sets, strict=True):
            credit.append(s["mean"]["successor"] if r.promoted else credit[-1])
            passes.append(s["pass_rate"]["successor"] if r.promoted else passes[-1])
        found[name] = {"n": sets[0]["n"], "credit_by_generation": credit,
                       "pass_rate_by_generation": passes}
    return found


def _groups(base: Any, last: Any) -> dict[str, GroupGain]:
    """Held-out reward and pass rate per template group: the base against the last production."""
    def mean(values: Any, at: list[int]) -> float | None:
        return sum(float(values[i]) for i in at) / len(at) if values else None

    rows: dict[str, GroupGain] = {}
    for group in sorted(set(base.groups)):
        at = [i for i, g in enumerate(base.groups) if g == group]
        rows[group] = {"n": len(at), "base_reward": mean(base.rewards, at),
                       "last_reward": mean(last.rewards, at),
                       "base_pass_rate": mean(base.passes, at), "last_pass_rate": mean(last.passes, at)}
    return rows


def finish_report(container: Any, demo: Any, base_model: str,
                  evaluation: Mapping[str, Evaluation] | None = None,
                  environment: Mapping[str, object] | None = None) -> DemoReport:
    from cli.demo_chart import chart

    cfg, console = demo.config, demo.console
    console.rule("[bold]the generations")
    console.print(table(demo.generations))
    out_dir = cfg.out_dir or container.settings.data_dir / "demo"
    out_dir.mkdir(parents=True, exist_ok=True)
    specialists = {s: rejudge(container, demo.generations, s) for s in cfg.specialists}
    for s, data in specialists.items():
        if data:
            data["evaluation"] = (evaluation or {}).get(s, {})
            _say(console, s, data)
    verify = container.store.verify()
    config = cast(DemoConfigJson, {**asdict(cfg), "out_dir": str(out_dir)})
    report: DemoReport = {
        "model": base_model, "config": config,
        "v2_after": cfg.v2_after, "generations": [_row(g) for g in demo.generations],
        "specialists": specialists, "timings_s": {k: round(v, 1) for k, v in demo.timings.items()},
        "environment": environment or {}, "chain_intact": verify.intact,
        "events": verify.checked}
    (out_dir / "demo-report.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    if any(specialists.values()):
        chart(report, out_dir / "demo-chart.png")
    console.print(f"  hash chain {'intact' if verify.intact else 'BROKEN'} over {verify.checked} events; "
                  f"report {out_dir / 'demo-report.json'}, chart {out_dir / 'demo-chart.png'}; "
                  f"{demo.timings.get('total', 0):.0f} s in all")
    return report


def _say(console: Any, specialist: str, data: SpecialistReport) -> None:
    v = data["last_vs_base"]
    console.print(f"  {specialist}: held-out reward by generation "
                  f"{' -> '.join(f'{x:.3f}' for x in data['production_by_generation'])}; "
                  f"last production vs base {v['mean']:+.3f}, 95% interval "
                  f"[{v['low']:+.3f}, {v['high']:+.3f}] over {v['n']} tasks")
    rates = data["pass_rate_by_generation"]
    if all(r is not None for r in rates):
        console.print(f"    held-out pass rate {' -> '.join(f'{x:.3f}' for x in rates)}")
    ev = data.get("evaluation") or {}
    if ev:
        console.print(f"    evaluation set (no gate saw it, {ev['n']} tasks): pass rate "
                      f"{' -> '.join(f'{x:.3f}' for x in ev['pass_rate_by_generation'])}")
    for name, probe in data["probes_by_generation"].items():
        console.print(f"    {name} ({probe['n']} tasks): credit "
                      f"{' -> '.join(f'{x:.3f}' for x in probe['credit_by_generation'])}")


def _row(generation: Generation) -> GenerationRow:
    return cast(GenerationRow, asdict(generation))  # the same fields
