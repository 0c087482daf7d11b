"""Which task family serves which specialist, how long its answers may be, where they end."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.tasks import Generator, Task, draw
from harness.tasks.agent import agent_task
from harness.tasks.chat import chat_task
from harness.tasks.coding import coding_task
from harness.tasks.genui import genui_task


@dataclass(frozen=True)
class Family:
    generator: Generator
    max_new_tokens: int  # answers longer than this are cut (and almost always wrong)
    stop: str | None  # "fence": after a closed ``` block; "json": after the first {...}


FAMILIES = {
    "coding": Family(coding_task, 160, "fence"),
    "genui": Family(genui_task, 96, "json"),
    "agent": Family(agent_task, 64, "json"),
    "chat": Family(chat_task, 80, None),
}
TRAIN_SEED, HELD_OUT_SEED = 1, 2  # the seeds the demo draws with

# The contract's split of a user message: "train" or "held_out" (see contract.evaluate).
Splitter = Callable[[str], str]


def family(specialist: str) -> Family:
    """Raises:
        KeyError: no task family serves ``specialist``.
    """
    found = FAMILIES.get(specialist)
    if found is None:
        raise KeyError(f"no task family for specialist '{specialist}' "
                       f"(known: {', '.join(sorted(FAMILIES))})")
    return found


def train_tasks(specialist: str, n: int, split: Splitter, seed: int = TRAIN_SEED) -> list[Task]:
    """``n`` tasks whose user message the contract puts in the train split."""
    return draw(family(specialist).generator, n, seed, lambda t: split(t.prompt) == "train")


def held_out_tasks(specialist: str, n: int, split: Splitter, seed: int = HELD_OUT_SEED) -> list[Task]:
    """``n`` tasks whose user message the contract holds out (never trained on)."""
    return draw(family(specialist).generator, n, seed, lambda t: split(t.prompt) == "held_out")
