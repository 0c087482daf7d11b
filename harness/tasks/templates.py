"""Task templates: the program shapes (or screen shapes, request shapes) a family is made of.

A family is a list of templates, each a seeded generator of tasks of one shape with its
own check (a coding template has its own hidden tests). Templates belong to groups
(``strings``, ``lists``, ...), so a gain can be reported per group, and a few are held
out **whole** (``unseen``): never drawn for training or for the instance-held-out gate
set, they measure whether what a successor learned transfers to shapes it never saw
(the unseen-template measure of every gate, ``harness.probes``). The choice of unseen
templates is written in each family's table, one or two per group, so it is the same on
every machine and can be read where the template is defined. Pure.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.tasks import Generator, Task

SEEN, UNSEEN = "seen", "unseen"
DRAWS_PER_TEMPLATE = 50  # rounds ``balanced`` may take before settling for fewer tasks


@dataclass(frozen=True)
class Template:
    name: str  # <family>.<shape>, e.g. coding.count_char
    group: str
    make: Callable[[random.Random], Task]
    unseen: bool = False  # held out whole: never trained on


def pick(templates: Sequence[Template], which: str) -> Generator:
    """A generator drawing uniformly from the ``which`` (seen or unseen) templates, each
    task tagged with its template and group (``Task.meta``)."""
    chosen = [t for t in templates if t.unseen == (which == UNSEEN)]
    if not chosen:
        raise ValueError(f"no {which} template")

    def generate(rng: random.Random) -> Task:
        template = chosen[rng.randrange(len(chosen))]
        task = template.make(rng)
        return Task(task.id, task.specialist, task.family, task.prompt, task.check,
                    task.system, task.shots,
                    {**task.meta, "template": template.name, "group": template.group})

    return generate


def groups(templates: Sequence[Template]) -> dict[str, list[str]]:
    """Group -> template names, in table order."""
    found: dict[str, list[str]] = {}
    for t in templates:
        found.setdefault(t.group, []).append(t.name)
    return found


def balanced(templates: Sequence[Template], n: int, seed: int) -> list[Task]:
    """``n`` distinct tasks, the templates taken in rounds (each round in a seeded order),
    so that every template counts alike in the set; fewer when the templates run out of
    distinct tasks."""
    rng = random.Random(seed)  # noqa: S311 (reproducible tasks, not secrets)
    seen: set[str] = set()
    out: list[Task] = []
    for _ in range(max(DRAWS_PER_TEMPLATE, 4 * n // max(1, len(templates)) + 1)):
        for template in rng.sample(list(templates), len(templates)):
            task = template.make(rng)
            if task.id not in seen:
                seen.add(task.id)
                out.append(Task(task.id, task.specialist, task.family, task.prompt, task.check,
                                task.system, task.shots,
                                {**task.meta, "template": template.name, "group": template.group}))
            if len(out) == n:
                return out
    return out
