"""The main job's memory stays flat across generations: two generations of the demo's loop on
the tiny model hold one base model in the engine and no model left over from a gate or a
training run, and the process's resident memory after the second generation is within a
small margin of the first's (what grew before: a base loaded for every gate's rollouts
and probe sets, never given back)."""

from __future__ import annotations

import gc
import io
import weakref
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

pytest.importorskip("peft")
pytestmark = [pytest.mark.train, pytest.mark.slow]

MARGIN_MB = 48  # the allocator's slack on a model of a few MB: a base load is not what it is


def models_alive(besides: weakref.WeakSet[Any] | None = None) -> int:
    """Language models held by anything (a causal LM, not the decoder stack inside it), other
    than those in `besides` (models alive before the demo began: earlier tests in the same
    process may keep theirs, which are not the demo's to free; held weakly, so as not to
    keep them alive)."""
    return sum(1 for m in _causal_lms() if besides is None or m not in besides)


def _causal_lms() -> list[Any]:
    from transformers import GenerationMixin, PreTrainedModel

    gc.collect()
    return [o for o in gc.get_objects()
            if isinstance(o, PreTrainedModel) and isinstance(o, GenerationMixin)]


def test_two_generations_hold_one_base_and_do_not_grow(tmp_path: Path, sqlite_template: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import cli.demo_run as demo_run
    from cli.demo_progress import rss_mb
    from tests.unit.trainer_core.fixtures import make_container

    (tmp_path / "hcp.sqlite3").write_bytes(sqlite_template.read_bytes())
    container = make_container(f"sqlite:///{tmp_path / 'hcp.sqlite3'}", tmp_path / "data")
    after: list[tuple[int, float, int]] = []
    train = demo_run.train_generation
    before: weakref.WeakSet[Any] = weakref.WeakSet(_causal_lms())

    def measured(demo: Any, gen: int, sampled: Any = None, specialists: Any = None) -> None:
        train(demo, gen, sampled, specialists)
        if not specialists or specialists[-1] == demo.config.specialists[-1]:
            demo_run.release_memory()
            after.append((gen, rss_mb(), models_alive(before)))

    monkeypatch.setattr(demo_run, "train_generation", measured)
    config = demo_run.DemoConfig(model="tiny", generations=2, train_tasks=4, held_out=8,
                                 eval_tasks=0, k=2, v2_after=0, out_dir=tmp_path / "out")
    try:
        demo_run.run_demo(container, config, Console(file=io.StringIO(), width=150))
        assert len(container.inference.pools) == 1  # one base, for the harness and every gate
    finally:
        container.close()
    (_, first, models_first), (_, second, models_second) = after
    assert models_first == models_second == 1  # the pool's base; every training run's is gone
    assert second - first < MARGIN_MB, after
