"""Short answers with one right content (`general` tasks): exact, one of, items, sequence.

Each rule is a pure function (answer, spec) -> bool on the answer's first line, trimmed
of surrounding space, quotes and a final full stop. Sub-scores are one 0/1 per rule and
the fraction met (``rules_met``); the answer passes when every rule holds, and its
partial credit is the fraction met (the general set's tasks have one content rule each,
so there is no credit for a wrong answer that merely looks right).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.checks.formats import RULES as FORMAT_RULES
from harness.checks.result import CheckResult


def first_line(answer: str) -> str:
    lines = [ln for ln in answer.strip().splitlines() if ln.strip()]
    text = lines[0].strip() if lines else ""
    return text.strip("\"'` ").rstrip(".").strip()


def _items(answer: str) -> list[str]:
    return [x.strip().strip(".").lower() for x in first_line(answer).split(",") if x.strip()]


def _exact(answer: str, spec: dict[str, Any]) -> bool:
    got, want = first_line(answer), str(spec["answer"])
    return got == want if spec.get("case") else got.lower() == want.lower()


def _one_of(answer: str, spec: dict[str, Any]) -> bool:
    return first_line(answer).lower() in {a.lower() for a in spec["answers"]}


def _from_pool(answer: str, spec: dict[str, Any]) -> bool:
    got = _items(answer)
    pool = {p.lower() for p in spec["from"]}
    return len(got) == spec["n"] and len(set(got)) == len(got) and all(g in pool for g in got)


def _sequence(answer: str, spec: dict[str, Any]) -> bool:
    return _items(answer) == [x.lower() for x in spec["items"]]


RULES: dict[str, Callable[[str, dict[str, Any]], bool]] = {
    "exact": _exact, "one_of": _one_of, "items": _from_pool, "sequence": _sequence,
    "max_words": FORMAT_RULES["max_words"],
}


def check_answer_rules(spec: dict[str, Any], answer: str) -> CheckResult:
    met = {r["rule"]: RULES[r["rule"]](answer, r) for r in spec["rules"]}
    scores = {f"rule_{k}": float(v) for k, v in met.items()}
    scores["rules_met"] = sum(met.values()) / len(met)
    ok = all(met.values())
    failed = [k for k, v in met.items() if not v]
    return CheckResult("answer_rules", ok, 1.0 if ok else scores["rules_met"], scores, ",".join(failed))
