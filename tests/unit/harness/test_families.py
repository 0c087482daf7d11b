"""The task families: dozens of coding shapes with their own hidden tests, templates held
out whole, no function name shared across the split, no free credit, and the general set."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from contract.split import subject_split
from harness.checks import run_checks
from harness.checks.sandbox import CodeSandbox, SandboxLimits
from harness.tasks import draw
from harness.tasks.catalog import FAMILIES, held_out_tasks, train_tasks, unseen_template_tasks
from harness.tasks.coding import TEMPLATES as CODING
from harness.tasks.general import general_tasks
from harness.tasks.templates import groups


def side(text: str) -> str:
    return subject_split(text, text)


def lookup(task) -> str:
    """A function that returns the expected outputs it was told: what a right answer returns."""
    table = {json.dumps(t["args"][0], sort_keys=True): t["expected"] for t in task.check["tests"]}
    return (f"```python\nimport json\nTABLE = {table!r}\n"
            f"def {task.check['entry']}(x):\n    return TABLE[json.dumps(x, sort_keys=True)]\n```")


def test_coding_has_dozens_of_shapes_in_seven_groups_with_some_held_out_whole():
    by_group = groups(CODING)
    assert set(by_group) == {"strings", "lists", "dicts", "arithmetic", "recursion", "parsing",
                             "algorithms"}
    assert len(CODING) >= 40 and all(len(names) >= 4 for names in by_group.values())
    unseen = {t.group for t in CODING if t.unseen}
    assert unseen == set(by_group)  # every group has a shape held out whole


def test_every_coding_shape_accepts_a_right_answer_and_gives_a_constant_little():
    tasks = [t.make(__import__("random").Random(i)) for i, t in enumerate(CODING)]
    right = run_checks([t.check for t in tasks], [lookup(t) for t in tasks],
                       CodeSandbox(SandboxLimits(timeout_s=5.0)))
    assert [r.passed for r in right] == [True] * len(tasks)
    constant = run_checks([t.check for t in tasks],
                          [f"```python\ndef {t.check['entry']}(x):\n    return 0\n```" for t in tasks])
    credit = sorted(r.scores["tests_passed"] for r in constant)
    assert credit[len(credit) // 2] <= 1 / 6 and max(credit) <= 3 / 6  # no free half


def test_train_and_held_out_never_share_a_function_name_and_never_use_unseen_shapes():
    train = train_tasks("coding", 150, side)
    held = held_out_tasks("coding", 200, side)
    assert not {t.check["entry"] for t in train} & {t.check["entry"] for t in held}
    unseen = {t.name for t in CODING if t.unseen}
    assert not unseen & {t.meta["template"] for t in train + held}
    probes = unseen_template_tasks("coding", 48)
    assert len(probes) >= 40 and {t.meta["template"] for t in probes} <= unseen
    assert all(side(t.prompt) == "held_out" for t in held)


@pytest.mark.parametrize("specialist", ["genui", "agent", "chat"])
def test_the_other_families_hold_templates_out_too(specialist):
    seen = draw(FAMILIES[specialist].generator, 60, 1)
    unseen = unseen_template_tasks(specialist, 30)
    assert len(unseen) == 30
    assert not {t.meta["template"] for t in seen} & {t.meta["template"] for t in unseen}


def test_a_genui_answer_that_lists_the_components_asked_for_passes():
    tasks = draw(FAMILIES["genui"].generator, 40, 2) + unseen_template_tasks("genui", 10)
    answers = [json.dumps({"components": t.check["expect"]}) for t in tasks]
    assert all(r.passed for r in run_checks([t.check for t in tasks], answers))
    assert len(Counter(t.meta["template"] for t in tasks)) >= 8


def test_the_general_set_is_fixed_and_checks_content():
    tasks = general_tasks(48)
    assert [t.id for t in tasks] == [t.id for t in general_tasks(48)]
    assert {t.meta["group"] for t in tasks} == {"arithmetic", "words", "knowledge"}
    plus = next(t for t in tasks if t.meta["template"] == "general.plus")
    want = plus.check["rules"][0]["answer"]
    (good, wrong, chatty) = run_checks([plus.check] * 3, [f"{want}.", "7", f"{want}\nbecause"])
    assert good.passed and not wrong.passed and wrong.partial == 0.0 and chatty.passed
    named = next(t for t in tasks if t.meta["template"] == "general.name_some")
    n, pool = named.check["rules"][0]["n"], named.check["rules"][0]["from"]
    assert run_checks([named.check], [", ".join(pool[:n])])[0].passed
    assert not run_checks([named.check], [", ".join([pool[0]] * n)])[0].passed


def test_the_demos_serving_contract_allows_every_familys_budget():
    """The endpoint harness (`hcp demo --stack`) asks for its family's max_new_tokens, and
    the server refuses a request above the serving contract's cap with a 400."""
    from pathlib import Path

    from contract.document import parse_contract

    example = Path(__file__).parents[3] / "examples" / "contracts" / "harness.toml"
    cap = parse_contract(example.read_text()).harness.limits.max_tokens
    assert {name: f.max_new_tokens for name, f in FAMILIES.items() if f.max_new_tokens > cap} == {}
