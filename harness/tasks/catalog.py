"""Which task family serves which specialist, how long its answers may be, where they end,
and the task sets drawn from them (train, instance-held-out, unseen-template, retention,
evaluation, general)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from harness.tasks import Generator, Task, draw
from harness.tasks.agent import agent_task, agent_unseen_task
from harness.tasks.chat import chat_task, chat_unseen_task
from harness.tasks.coding import coding_task, coding_unseen_task
from harness.tasks.general import general_task
from harness.tasks.genui import genui_task, genui_unseen_task
from harness.tasks.retention_coding import coding_retention_tasks
from harness.tasks.retention_genui import genui_retention_tasks


@dataclass(frozen=True)
class Family:
    generator: Generator  # the seen templates: what trains and what the gate holds out
    max_new_tokens: int  # answers longer than this are cut (and almost always wrong)
    stop: str | None  # "fence": after a closed ``` block; "json": after the first {...}
    unseen: Generator | None = None  # the templates held out whole (never trained on)
    # what users ask the specialist beyond every template (never trained on): (n, seed) -> tasks
    retention: Callable[[int, int], list[Task]] | None = None


FAMILIES = {
    "coding": Family(coding_task, 160, "fence", coding_unseen_task,
                     coding_retention_tasks),
    "genui": Family(genui_task, 96, "json", genui_unseen_task,
                    genui_retention_tasks),
    "agent": Family(agent_task, 64, "json", agent_unseen_task),
    "chat": Family(chat_task, 80, None, chat_unseen_task),
    # no specialist's: the general set every gate answers (harness.tasks.general)
    "general": Family(general_task, 32, "line"),
}
TRAIN_SEED, HELD_OUT_SEED = 1, 2  # the seeds the demo draws with
UNSEEN_SEED, EVAL_SEED = 3, 4  # the unseen-template probe set; the demo's evaluation set
RETENTION_SEED = 5  # the retention probe set

# The subject's split of a user message: "train" or "held_out" (see contract.split).
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
    """``n`` tasks of seen templates whose user message is on the train side."""
    return draw(family(specialist).generator, n, seed, lambda t: split(t.prompt) == "train")


def held_out_tasks(specialist: str, n: int, split: Splitter, seed: int = HELD_OUT_SEED,
                   exclude: Collection[str] = ()) -> list[Task]:
    """``n`` tasks of seen templates whose user message is held out (never trained on),
    other than those of ``exclude`` (task ids)."""
    gone = set(exclude)
    return draw(family(specialist).generator, n, seed,
                lambda t: split(t.prompt) == "held_out" and t.id not in gone)


def unseen_template_tasks(specialist: str, n: int, seed: int = UNSEEN_SEED) -> list[Task]:
    """Up to ``n`` tasks of the templates held out whole (none when the family has none)."""
    unseen = family(specialist).unseen
    return draw(unseen, n, seed, at_most=True) if unseen is not None else []


def retention_tasks(specialist: str, n: int, seed: int = RETENTION_SEED) -> list[Task]:
    """Up to ``n`` tasks of the specialist's retention set (none when it has none)."""
    retention = family(specialist).retention
    return retention(n, seed) if retention is not None else []
