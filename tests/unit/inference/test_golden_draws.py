"""The demo's draws on the tiny model, byte for byte: the same seed, tasks and target give
the same answers as when they were captured (tests/golden/demo_draws.json).

What the demo generates, each through the path the demo takes: the held-out tasks
answered greedily by the bare base (generation 0), train tasks sampled k=2 at temperature
0.5 by base + an adapter (a generation's sampling), the gate's greedy answers to held-out
tasks and its probe sets by base + adapter, and the evaluation set by the bare base.
The file holds the tasks as they were drawn then and each answer's sha256 and token
count, captured by the sampler and pools the demo had before ``inference/`` existed
(commit 459d21a; the capture re-run there reproduces the file). Captured with torch 2.15
on an AVX512 CPU (fp32, the tiny model's precision): a CPU that rounds differently could
move a near tie; the environment is in the file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("peft")
pytestmark = [pytest.mark.train]

GOLDEN = Path(__file__).parents[2] / "golden" / "demo_draws.json"
SPECIALISTS = ("coding", "genui")


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def task_of(doc: dict[str, Any]) -> Any:
    from harness.tasks import Task

    return Task(**{**doc, "shots": tuple(tuple(pair) for pair in doc["shots"])})


def tasks() -> dict[str, Any]:
    """The tasks as they were drawn when the draws were captured (the catalogue may grow
    or change since; the draws are of these)."""
    stored = json.loads(GOLDEN.read_text())["tasks"]
    return {which: {s: [task_of(t) for t in stored[which][s]] for s in SPECIALISTS}
            for which in ("held", "train", "eval", "probes")}


def draws(tmp: Path) -> dict[str, list[list[Any]]]:
    """Everything through one engine, as in the demo's process (one base, one pool)."""
    from cli.demo_setup import EXAMPLE_CONTRACT
    from contract.document import parse_contract
    from harness.probes import greedy_answers
    from harness.serve import Production, TaskHarness
    from inference.embedded.engine import EmbeddedEngine
    from inference.types import Adapter, BaseModel, Target
    from tests.serving_world import lora_dir
    from trainer.ml.digest import weights_sha256
    from trainer.ml.tiny_model import build_tiny_base_model
    from trainer.registry.artifacts import dir_sha256

    base_dir = build_tiny_base_model(tmp / "base", seed=0)
    adapter_dir = lora_dir(base_dir, tmp / "adapter", seed=1)
    base = BaseModel("hcp-tiny", str(base_dir), weights_sha256(base_dir))
    bare = Target(base, None, "fp32", "cpu")
    adapted = Target(base, Adapter(dir_sha256(adapter_dir), adapter_dir), "fp32", "cpu")
    # The batches the draws were captured with: no memory bound (it would split them).
    engine = EmbeddedEngine(lambda digest: adapter_dir, "cpu", batch_memory_mb=None)
    settings = parse_contract(EXAMPLE_CONTRACT.read_text()).harness
    sets = tasks()

    class Source:
        def __init__(self, version: str, target: Target) -> None:
            self.version, self.target = version, target

        def production(self, specialist: str) -> Production:
            return Production(f"{specialist}{self.version}", self.target)

    class Sink:
        def post(self, events: Any) -> int:
            return len(events)

    def serve(source: Source, which: str, k: int, temperature: float, seed: int) -> list:
        harness = TaskHarness(engine, source, Sink(), settings, "harness@1")
        out = []
        for s in SPECIALISTS:
            out += [[digest(a.text), a.new_tokens] for a in
                    harness.serve(sets[which][s], k=k, temperature=temperature, seed=seed)]
        return out

    def greedy(target: Target, task_list: list) -> list:
        return [[digest(a), None] for a in greedy_answers(engine, target, task_list)]

    return {
        "held_out_greedy_base": serve(Source("@0", bare), "held", 1, 0.0, 0),
        "train_sampled_adapter": serve(Source("@1", adapted), "train", 2, 0.5, 1001),
        "gate_greedy_adapter": greedy(adapted, [t for s in SPECIALISTS for t in sets["held"][s]]),
        "probes_greedy_adapter": greedy(adapted, [t for s in SPECIALISTS for t in sets["probes"][s]]),
        "evaluation_greedy_base": greedy(bare, [t for s in SPECIALISTS for t in sets["eval"][s]]),
    }


def environment() -> dict[str, Any]:
    import torch

    return {"torch": torch.__version__.split("+")[0],
            "cpu": torch.backends.cpu.get_cpu_capability(), "threads": torch.get_num_threads()}


def test_the_demos_draws_are_the_captured_ones(tmp_path: Path) -> None:
    found = draws(tmp_path)
    golden = json.loads(GOLDEN.read_text())
    for name, answers in golden["draws"].items():
        assert found[name] == answers, (name, golden["environment"], environment())
    assert set(found) == set(golden["draws"])
