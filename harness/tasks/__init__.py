"""Deterministic task families, one per specialist: what the harness asks the model.

A task is plain data (JSON-serialisable), so it travels in the log: the user message the
harness sends, the context before it (a system message and example exchanges), and a
``check`` spec that a checker in ``harness.checks`` turns into pass/fail and sub-scores.
Nothing here runs model output.

Where they come from: each family (``coding``, ``genui``, ``agent``, ``chat``; see their
modules) composes tasks from small vocabularies with a seeded ``random.Random``, so the
same seed gives the same tasks on every machine. A task's id is a hash of everything the
model sees. Which tasks are held out is not decided here: the subject's split rule
decides (``contract.split``: the user message hashed, under every contract), and ``draw``
takes the predicate, so train and held-out prompts are disjoint by construction and a
held-out prompt is never trained on, under any number of samples.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Task:
    id: str  # <family>:sha256(everything the model sees)[:12]
    specialist: str
    family: str
    prompt: str  # the user message
    check: dict[str, Any]  # what ``harness.checks.run_checks`` needs; never shown to the model
    system: str | None = None  # None: the chat template's default system message
    shots: tuple[tuple[str, str], ...] = ()  # example (user, assistant) exchanges before it
    meta: dict[str, Any] = field(default_factory=dict)

    def context(self) -> list[dict[str, str]]:
        """The chat messages the model sees before the user message."""
        messages = [{"role": "system", "content": self.system}] if self.system else []
        for user, assistant in self.shots:
            messages += [{"role": "user", "content": user},
                         {"role": "assistant", "content": assistant}]
        return messages

    def messages(self) -> list[dict[str, str]]:
        """Everything the model is given: the context, then the user message."""
        return [*self.context(), {"role": "user", "content": self.prompt}]


def make_task(specialist: str, family: str, prompt: str, check: dict[str, Any],
              system: str | None = None, shots: tuple[tuple[str, str], ...] = (),
              **meta: Any) -> Task:
    seen = json.dumps([system, shots, prompt], ensure_ascii=False)
    digest = hashlib.sha256(seen.encode()).hexdigest()[:12]
    return Task(f"{family}:{digest}", specialist, family, prompt, check, system, shots, meta)


Generator = Callable[[random.Random], Task]
DRAWS_PER_TASK = 200  # how many candidates ``draw`` may try per task wanted
# ``at_most``: this many candidates in a row that bring nothing new end the draw (a family
# of a few dozen distinct prompts would otherwise be tried 200 times per task wanted)
EXHAUSTED_AFTER = 5000


def draw(generator: Generator, n: int, seed: int,
         keep: Callable[[Task], bool] = lambda task: True, at_most: bool = False) -> list[Task]:
    """The first ``n`` distinct tasks the seeded generator produces that ``keep`` accepts
    (``at_most``: fewer when there are not that many).

    Raises:
        ValueError: the generator runs out of distinct accepted tasks (not ``at_most``).
    """
    rng = random.Random(seed)  # noqa: S311 (reproducible tasks, not secrets)
    seen: set[str] = set()
    out: list[Task] = []
    misses = 0
    for _ in range(DRAWS_PER_TASK * n + 1000):
        task = generator(rng)
        if task.id in seen or not keep(task):
            misses += 1
            if at_most and misses > EXHAUSTED_AFTER:
                break  # the generator has no more distinct tasks to give, in all likelihood
            continue
        misses = 0
        seen.add(task.id)
        out.append(task)
        if len(out) == n:
            return out
    if at_most:
        return out
    raise ValueError(f"{generator.__module__}: only {len(out)} distinct tasks, wanted {n}")
