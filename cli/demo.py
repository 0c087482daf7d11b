"""`hcp demo`: the main job. Embedded by default (SQLite, the database log, in-process
training); ``--stack`` runs it against PostgreSQL, Kafka and Redis with the server's
processes separate (cli/demo_stack.py); ``--seeds`` runs the loop once per seed, each in
a data directory of its own, and reports the spread of each generation's gain
(cli/demo_seeds.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from cli.demo_run import DemoConfig

# The sizes each model runs with unless an option says otherwise. The tiny model is a
# random one: its figures mean nothing and every answer runs to the family's token
# budget, so it runs a loop just large enough to exercise every path (CI runs it).
SIZES = {"real": {"train_tasks": 48, "held_out": 192, "eval_tasks": 96, "k": 4},
         "tiny": {"train_tasks": 8, "held_out": 24, "eval_tasks": 16, "k": 2}}


def demo(
    model: str = typer.Option("smollm2-135m", help="smollm2-135m (real, pretrained) or tiny "
                              "(random weights, for fast tests)"),
    specialists: str = typer.Option("coding,genui", help="Specialists to train, comma-separated"),
    generations: int = typer.Option(3, min=1, help="Generations per specialist"),
    train_tasks: int = typer.Option(None, min=1, help="Train tasks per specialist per "
                                    "generation (default 48; tiny: 8)"),
    held_out: int = typer.Option(None, min=2, help="Held-out tasks per specialist, the gates' "
                                 "(default 192; tiny: 24)"),
    eval_tasks: int = typer.Option(None, min=0, help="Evaluation tasks per specialist, which no "
                                   "gate sees (default 96; tiny: 16; 0: none)"),
    k: int = typer.Option(None, min=1, help="Samples per train task (default 4; tiny: 2)"),
    temperature: float = typer.Option(0.5, min=0.0, help="Sampling temperature of train tasks"),
    seed: int = typer.Option(0, min=0),
    seeds: str = typer.Option(None, help="Run the loop once per seed and report the spread of "
                              "each generation's gain: a list (0,1,2) or a count (3: seeds 0-2); "
                              "each seed's data under <data_dir>/demo-seeds/seed-N"),
    v2_after: int = typer.Option(2, min=0, help="Publish contract v2 after this generation (0: never)"),
    min_examples: int = typer.Option(0, min=0, help="Sample rounds of --train-tasks tasks per "
                                     "specialist until this many examples the training "
                                     "objective can use (0: one round)"),
    sample_budget: int = typer.Option(0, min=0, help="Most answers sampled per specialist per "
                                      "generation (0: one round, --train-tasks x --k)"),
    objective: str = typer.Option(None, help="sft (rejection-sampling fine-tuning) or dpo "
                                  "(preference pairs): written into the contract's training "
                                  "policies (default: the contract's as written)"),
    out: Path = typer.Option(None, help="Report and chart directory (default <data_dir>/demo)"),
    device: str = typer.Option(None, help="cpu, cuda, … (default: CUDA when present)"),
    stack: bool = typer.Option(False, help="Against PostgreSQL, Kafka and Redis, the server's "
                               "processes separate, the harness posting over HTTP"),
) -> None:
    """Run the continual-learning loop on a real model: serve, score, train, gate, promote."""
    from cli.demo_run import DemoConfig

    sizes = SIZES["tiny" if model == "tiny" else "real"]
    config = DemoConfig(model=model,
                        specialists=tuple(s.strip() for s in specialists.split(",") if s.strip()),
                        generations=generations,
                        train_tasks=train_tasks or sizes["train_tasks"],
                        held_out=held_out or sizes["held_out"],
                        eval_tasks=sizes["eval_tasks"] if eval_tasks is None else eval_tasks,
                        k=k or sizes["k"], temperature=temperature, seed=seed, v2_after=v2_after,
                        out_dir=out.resolve() if out else None, device=device,
                        min_examples=min_examples, sample_budget=sample_budget,
                        objective=_objective(objective))
    if seeds is not None:
        if stack:
            raise typer.BadParameter("--seeds runs embedded only (one SQLite log per seed)",
                                     param_hint="--seeds")
        from cli.demo_seeds import parse_seeds, run_seeds

        raise typer.Exit(run_seeds(config, parse_seeds(seeds)))
    quiet_libraries()
    if stack:
        from cli.demo_stack import run_stack_demo

        raise typer.Exit(run_stack_demo(config))
    raise typer.Exit(run_embedded(config))


def _objective(value: str | None) -> str | None:
    if value is not None and value not in ("sft", "dpo"):
        raise typer.BadParameter(f"{value!r}: sft or dpo", param_hint="--objective")
    return value


def run_embedded(config: DemoConfig) -> int:
    """The loop in this process on the configured data directory; 1 when it did not finish."""
    from cli.demo_run import run_demo
    from hcp import migrate
    from hcp.bootstrap import bootstrap
    from hcp.settings import get_settings

    settings = get_settings()
    migrate.upgrade(settings.resolved_database_url)
    container = bootstrap(settings)
    try:
        report = run_demo(container, config)
    finally:
        container.close()
    return 0 if report["chain_intact"] and report["generations"] else 1


def quiet_libraries() -> None:
    """The demo shows its own progress; transformers' per-load bars and notices are noise."""
    import os
    import warnings

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning, module="peft")


def register(app: typer.Typer) -> None:
    app.command()(demo)
