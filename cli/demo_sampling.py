"""`hcp demo`'s sampling of a generation: rounds of train tasks until the answers give
enough examples to train on, or a budget of answers is spent.

A fixed number of tasks gives a specialist that rarely passes (coding: about 14 passing
answers of 192) little to learn from, and one that often passes more than it needs. So
each specialist is served rounds of ``train_tasks`` fresh tasks (k samples each) until
its answers this generation give ``min_examples`` examples the contract's training
objective can use (``usable``), or ``sample_budget`` answers are spent; with
``min_examples`` 0 it is one round, as a fixed number of tasks. The first round draws as
the fixed-size loop did (the same tasks and sampling seed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness.session import Served
from harness.tasks import Task

Serve = Callable[[dict[str, list[Task]], int], list[Served]]  # (tasks, seed) -> answers


def reward(served: Served) -> float:
    """The answer's reward as the demo's contract (v1) scores it: 1 when it passes, else
    half its partial credit; only the order matters here."""
    return 1.0 if served.check.passed else float(served.check.partial) / 2


def usable(answers: Sequence[Served], hyper: Mapping[str, Any]) -> int:
    """Examples the objective can train on: for ``sft``, per task, the distinct answers
    rewarded at least ``min_reward`` (at most ``keep_per_prompt`` with ``best_of_k``); for
    ``dpo``, per task, the pairs of a higher-rewarded answer (at least ``min_reward``) over
    a lower one."""
    by_task: dict[str, list[Served]] = {}
    for served in answers:
        by_task.setdefault(served.task.id, []).append(served)
    floor = float(hyper.get("min_reward", 0.0))
    total = 0
    for group in by_task.values():
        rewards = [reward(s) for s in group]
        if hyper.get("objective", "sft") == "dpo":
            total += sum(1 for a in rewards for b in rewards if a > b and a >= floor)
            continue
        good = {s.text for s, r in zip(group, rewards, strict=True) if r >= floor and r > 0}
        keep = int(hyper.get("keep_per_prompt", 1))
        total += min(len(good), keep) if hyper.get("selection") == "best_of_k" else len(good)
    return total


def sample_generation(serve: Serve, train: Mapping[str, list[Task]], used: dict[str, int],
                      hypers: Mapping[str, Mapping[str, Any]], *, round_tasks: int, k: int,
                      min_examples: int, budget: int, seed: int) -> dict[str, dict[str, int]]:
    """Serve rounds until each specialist is done; per specialist, the answers served, the
    usable examples they gave and the rounds. ``used`` (tasks served so far per
    specialist, the next round starts after them) is advanced."""
    budget = budget or round_tasks * k
    found = {s: {"answers": 0, "usable": 0, "rounds": 0} for s in train}
    answers: dict[str, list[Served]] = {s: [] for s in train}
    for rnd in range(budget // k + 1):
        todo = {}
        for s, tasks in train.items():
            done = found[s]["answers"] >= budget or (
                found[s]["usable"] >= min_examples if min_examples else rnd > 0)
            n = min(round_tasks, (budget - found[s]["answers"]) // k, len(tasks) - used.get(s, 0))
            if not done and n > 0:
                todo[s] = tasks[used.get(s, 0): used.get(s, 0) + n]
        if not todo:
            break
        for served in serve(todo, seed + 100 * rnd):
            answers[served.task.specialist].append(served)
        for s, tasks in todo.items():
            used[s] = used.get(s, 0) + len(tasks)
            found[s] = {"answers": len(answers[s]), "usable": usable(answers[s], hypers.get(s, {})),
                        "rounds": found[s]["rounds"] + 1}
    return found
