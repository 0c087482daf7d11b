"""`hcp demo`: the main job. Embedded by default (SQLite, the database log, in-process
training); ``--stack`` runs it against PostgreSQL, Kafka and Redis with the server's
processes separate (cli/demo_stack.py)."""

from __future__ import annotations

from pathlib import Path

import typer


def demo(
    model: str = typer.Option("smollm2-135m", help="smollm2-135m (real, pretrained) or tiny "
                              "(random weights, for fast tests)"),
    specialists: str = typer.Option("coding,genui", help="Specialists to train, comma-separated"),
    generations: int = typer.Option(3, min=1, help="Generations per specialist"),
    train_tasks: int = typer.Option(48, min=1, help="Train tasks per specialist per generation"),
    held_out: int = typer.Option(192, min=2, help="Held-out tasks per specialist (the gates')"),
    eval_tasks: int = typer.Option(96, min=0, help="Evaluation tasks per specialist, which no "
                                   "gate sees (0: none)"),
    k: int = typer.Option(4, min=1, help="Samples per train task"),
    temperature: float = typer.Option(0.5, min=0.0, help="Sampling temperature of train tasks"),
    seed: int = typer.Option(0, min=0),
    v2_after: int = typer.Option(2, min=0, help="Publish contract v2 after this generation (0: never)"),
    out: Path = typer.Option(None, help="Report and chart directory (default <data_dir>/demo)"),
    device: str = typer.Option(None, help="cpu, cuda, … (default: CUDA when present)"),
    stack: bool = typer.Option(False, help="Against PostgreSQL, Kafka and Redis, the server's "
                               "processes separate, the harness posting over HTTP"),
) -> None:
    """Run the continual-learning loop on a real model: serve, score, train, gate, promote."""
    from cli.demo_run import DemoConfig, run_demo
    from hcp import migrate
    from hcp.bootstrap import bootstrap
    from hcp.settings import get_settings

    quiet_libraries()
    config = DemoConfig(model=model if model != "tiny" else "tiny",
                        specialists=tuple(s.strip() for s in specialists.split(",") if s.strip()),
                        generations=generations, train_tasks=train_tasks, held_out=held_out,
                        eval_tasks=eval_tasks,
                        k=k, temperature=temperature, seed=seed, v2_after=v2_after,
                        out_dir=out.resolve() if out else None,
                        device=device)
    if stack:
        from cli.demo_stack import run_stack_demo

        raise typer.Exit(run_stack_demo(config))
    settings = get_settings()
    migrate.upgrade(settings.resolved_database_url)
    container = bootstrap(settings)
    try:
        report = run_demo(container, config)
    finally:
        container.close()
    if not report["chain_intact"] or not report["generations"]:
        raise typer.Exit(1)


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
