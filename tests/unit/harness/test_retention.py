"""The retention sets: what users ask a specialist beyond every template, fixed, spread over
their phrasings, disjoint from the families, and checked as the family's answers are."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from contract.split import subject_split
from harness.checks import run_checks
from harness.checks.sandbox import CodeSandbox, SandboxLimits
from harness.tasks.catalog import held_out_tasks, retention_tasks, train_tasks, unseen_template_tasks
from harness.tasks.coding import TEMPLATES as CODING
from harness.tasks.retention_coding import EXERCISES, STYLES


def side(text: str) -> str:
    return subject_split(text, text)


@pytest.mark.parametrize("specialist", ["coding", "genui"])
def test_the_set_is_fixed_even_and_shares_no_prompt_with_the_family(specialist):
    tasks = retention_tasks(specialist, 240)
    assert [t.id for t in tasks] == [t.id for t in retention_tasks(specialist, 240)]
    assert len({t.id for t in tasks}) == 240 and all(t.specialist == specialist for t in tasks)
    counts = Counter(t.meta["template"] for t in tasks)
    assert max(counts.values()) - min(counts.values()) <= 2  # every phrasing counts alike
    family = (train_tasks(specialist, 200, side) + held_out_tasks(specialist, 200, side)
              + unseen_template_tasks(specialist, 80))
    assert not {t.prompt for t in tasks} & {t.prompt for t in family}
    assert retention_tasks("chat", 10) == []


def test_no_coding_exercise_is_a_shape_of_the_family():
    shapes = {re.sub(r"_?\{\w+\}", "", t.name.split(".", 1)[1]) for t in CODING}
    assert not {e.name for e in EXERCISES} & shapes
    assert len(EXERCISES) >= 40 and len(STYLES) == 4


def test_a_right_coding_answer_passes_and_a_constant_earns_little():
    tasks = retention_tasks("coding", len(EXERCISES) * len(STYLES))
    right = [f"```python\nimport json\nTABLE = {_table(t)!r}\n"
             f"def {t.check['entry']}(*a):\n    return TABLE[json.dumps(list(a))]\n```" for t in tasks]
    sandbox = CodeSandbox(SandboxLimits(timeout_s=5.0))
    assert all(r.passed for r in run_checks([t.check for t in tasks], right, sandbox))
    constant = run_checks([t.check for t in tasks],
                          [f"```python\ndef {t.check['entry']}(*a):\n    return 0\n```" for t in tasks],
                          sandbox)
    assert sum(r.partial for r in constant) / len(constant) < 0.2


def test_a_genui_answer_with_the_components_asked_for_passes():
    tasks = retention_tasks("genui", 60)
    answers = [json.dumps({"components": t.check["expect"]}) for t in tasks]
    assert all(r.passed for r in run_checks([t.check for t in tasks], answers))
    assert all(t.check["expect"][-1]["type"] == "button" for t in tasks)


def _table(task) -> dict[str, object]:
    return {json.dumps(test["args"]): test["expected"] for test in task.check["tests"]}
