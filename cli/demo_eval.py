"""`hcp demo`'s evaluation set: each production adapter on tasks no gate ever saw.

The gate's held-out tasks chose which successors were promoted, so figures measured on
them are biased upward (the promoted ones are those that happened to do well there).
The evaluation set is drawn from the same held-out side of the split but apart from the
gate's tasks, and is never recorded (so it is in no manifest and no gate): every
adapter that was in production at some generation (the base included) answers it
greedily, as the harness serves, and the checks judge the answers (pass rate, and the
check's credit). Adapters are resolved by the registry and loaded by digest, verified.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict

from cli.demo_report import Generation
from cli.demo_shapes import Evaluation, EvaluationGroup
from harness.probes import greedy_answers, measure
from harness.tasks import Task
from inference.types import Target


def production_chain(rows: Sequence[Generation], specialist: str) -> list[str | None]:
    """The adapter in production after each generation (None: the base), generation 0 first."""
    chain: list[str | None] = [None]
    for row in (r for r in rows if r.specialist == specialist):
        chain.append(row.adapter_id if row.promoted else chain[-1])
    return chain


class _Measured(TypedDict):
    """One adapter on the evaluation set."""

    pass_rate: float
    credit: float
    passes: list[bool]
    groups: list[str]


def evaluate(container: Any, base_model: str, rows: Sequence[Generation], specialist: str,
             tasks: Sequence[Task], precision: str, device: str | None) -> Evaluation:
    """Pass rate and mean check credit of the production adapter of each generation, and
    of every successor, promoted or not."""
    if not tasks:
        return {}
    chain = production_chain(rows, specialist)
    mine = [r for r in rows if r.specialist == specialist]
    measured: dict[str | None, _Measured] = {}
    # each distinct adapter once: the production chain's, then every rejected successor's,
    # so two recipes can be compared on this set whatever their gates decided
    for adapter_id in dict.fromkeys([*chain, *(r.adapter_id for r in mine)]):
        if adapter_id is None:
            target = Target(container.resolver.base(base_model), None, precision, device)
        else:
            target = container.resolver.resolve(adapter_id).target(precision, device)
        answers = greedy_answers(container.inference, target, tasks)
        m = measure("evaluation", tasks, answers, container.code_sandbox)
        measured[adapter_id] = {"pass_rate": m.pass_rate, "credit": m.mean, "passes": list(m.passes),
                                "groups": list(m.groups)}
    return {"n": len(tasks), "adapters": [a or "base" for a in chain],
            "successors": [{"generation": r.generation, "adapter": r.adapter_id,
                            "promoted": r.promoted, "pass_rate": measured[r.adapter_id]["pass_rate"],
                            "credit": measured[r.adapter_id]["credit"]} for r in mine],
            "pass_rate_by_generation": [measured[a]["pass_rate"] for a in chain],
            "credit_by_generation": [measured[a]["credit"] for a in chain],
            # per task, in task order: what the seeds' paired comparison of generations needs
            "passes_by_generation": [[int(p) for p in measured[a]["passes"]] for a in chain],
            "by_group": _by_group(measured[chain[0]], measured[chain[-1]])}


def _by_group(first: _Measured, last: _Measured) -> dict[str, EvaluationGroup]:
    """Pass rate per template group, base against the last production adapter."""
    rows: dict[str, EvaluationGroup] = {}
    for group in sorted(set(first["groups"])):
        at = [i for i, g in enumerate(first["groups"]) if g == group]
        base = sum(first["passes"][i] for i in at) / len(at)
        last_rate = sum(last["passes"][i] for i in at) / len(at)
        rows[group] = {"n": len(at), "base": base, "last": last_rate, "gain": last_rate - base}
    return rows
