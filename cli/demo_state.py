"""What the demo's parts share: its configuration, where its loop runs (``Backend``) and
the state of one run (``Demo``), apart from the loop (``cli.demo_run``) and its setup
(``cli.demo_setup``), which both use them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from rich.console import Console

from cli.demo_report import Generation
from contract.versions import ContractVersions
from harness.serve import ServesTasks
from hcp.bootstrap import Container

REAL_MODEL, TINY_MODEL = "smollm2-135m", "hcp-tiny"
# The width of the demo's output when it goes to a file or a pipe (a terminal keeps its
# own): the generations table, 14 columns, must stay whole for a reader or a grep.
PIPED_DEMO_WIDTH = 200


@dataclass(frozen=True)
class DemoConfig:
    model: str = REAL_MODEL  # "smollm2-135m" or "tiny"
    specialists: tuple[str, ...] = ("coding", "genui")
    generations: int = 3
    train_tasks: int = 48  # per specialist per generation
    held_out: int = 192  # per specialist: the gate's held-out tasks
    eval_tasks: int = 96  # per specialist: the evaluation set no gate sees (0: none)
    k: int = 4
    temperature: float = 0.5
    seed: int = 0
    v2_after: int = 2  # publish contract v2 after this generation (0: never)
    # Sampling per specialist per generation: rounds of ``train_tasks`` tasks x k until the
    # round's answers give ``min_examples`` examples the training objective can use, or
    # ``sample_budget`` answers are spent (0: one round, ``train_tasks`` x k).
    min_examples: int = 0
    sample_budget: int = 0
    objective: str | None = None  # "sft" or "dpo" in the contract's policy; None: as written
    out_dir: Path | None = None  # report and chart; default <data_dir>/demo
    device: str | None = None


class Backend(Protocol):
    """Where the loop runs: embedded (this process) or the stack (cli/demo_stack.py)."""

    def harness(self, demo: Demo, base_model: str) -> ServesTasks:
        """The harness, recording through this backend's ingest path."""

    def score(self, demo: Demo, what: str) -> None:
        """Return once everything recorded so far is scored under the published contract."""

    def wait_run(self, demo: Demo, run_id: str) -> None:
        """Return once the training run has finished."""


@dataclass
class Demo:
    container: Container
    config: DemoConfig
    console: Console
    backend: Backend | None = None
    harness: ServesTasks | None = None
    generations: list[Generation] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    answers: int = 0  # sessions recorded so far
    # per specialist, the train tasks served so far (the next round starts after them)
    train_used: dict[str, int] = field(default_factory=dict)

    @property
    def contracts(self) -> ContractVersions:
        return self.container.contracts
