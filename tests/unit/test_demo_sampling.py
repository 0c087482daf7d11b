"""`hcp demo`'s sampling: rounds of train tasks until the answers give enough examples for
the contract's objective, or the budget of answers is spent."""

from __future__ import annotations

from typing import Any

from cli.demo_sampling import sample_generation, usable
from harness.checks.result import CheckResult
from harness.session import Served
from harness.tasks import Task, make_task


def task(i: int) -> Task:
    return make_task("coding", "strings", f"Write f{i}.", {"kind": "python_tests"})


def answer(t: Task, text: str, partial: float) -> Served:
    check = CheckResult("python_tests", partial == 1.0, partial)
    return Served(t, None, "coding@0", "harness@1", text, 3, check, 0)  # type: ignore[arg-type]


RFT = {"objective": "sft", "selection": "best_of_k", "keep_per_prompt": 2, "min_reward": 1.0}
DPO = {"objective": "dpo", "selection": "all", "min_reward": 0.0}


def test_rft_counts_distinct_passing_answers_and_dpo_counts_ordered_pairs():
    t = task(0)
    answers = [answer(t, "a", 1.0), answer(t, "a", 1.0), answer(t, "b", 1.0),
               answer(t, "c", 1.0), answer(t, "d", 0.5), answer(t, "e", 0.0)]
    assert usable(answers, RFT) == 2  # three distinct passes, two kept per task
    # four passes over 0.5 and 0.0, 0.5 over 0.0: 4 * 2 + 1
    assert usable(answers, DPO) == 9
    assert usable([answer(t, "x", 0.0), answer(t, "y", 0.0)], DPO) == 0


def test_rounds_go_on_until_enough_examples_or_the_budget():
    tasks = {"coding": [task(i) for i in range(40)]}
    seeds: list[int] = []

    def serve(todo: dict[str, list[Task]], seed: int) -> list[Served]:
        seeds.append(seed)
        # every fourth task passes once, the rest fail: one example per four tasks
        return [answer(t, f"{t.id}:{j}", 1.0 if j == 0 and i % 4 == 0 else 0.0)
                for i, t in enumerate(todo["coding"]) for j in range(2)]

    used: dict[str, int] = {}
    found = sample_generation(serve, tasks, used, {"coding": RFT}, round_tasks=8, k=2,
                              min_examples=3, budget=100, seed=7)
    assert found["coding"] == {"answers": 32, "usable": 4, "rounds": 2} and used == {"coding": 16}
    assert seeds == [7, 107]
    capped = sample_generation(serve, tasks, used, {"coding": RFT}, round_tasks=8, k=2,
                               min_examples=50, budget=20, seed=8)
    assert capped["coding"]["answers"] == 20 and used == {"coding": 26}
    one: dict[str, Any] = {}
    single = sample_generation(serve, tasks, one, {"coding": RFT}, round_tasks=8, k=2,
                               min_examples=0, budget=0, seed=9)
    assert single["coding"]["rounds"] == 1 and one == {"coding": 8}


def test_the_objective_is_the_contracts_training_policy_and_dpo_trains_with_nll():
    from cli.demo_setup import EXAMPLE_CONTRACT, with_objective
    from contract.document import parse_contract

    doc = parse_contract(with_objective(EXAMPLE_CONTRACT.read_text(), "dpo"))
    hypers = [t.hyper for t in doc.training.triggers.values()]
    assert hypers and all(h["objective"] == "dpo" and h["dpo_nll_weight"] == 1.0 for h in hypers)
    rft = parse_contract(with_objective(EXAMPLE_CONTRACT.read_text(), "sft"))
    assert all(t.hyper["objective"] == "sft" for t in rft.training.triggers.values())
