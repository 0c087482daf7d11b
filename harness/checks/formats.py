"""Format and length rules for `chat` answers (IFEval-style verifiable instructions).

Each rule is a pure function (answer, spec) -> bool. The sub-scores are one 0/1 per rule
(`rule_<name>`), the fraction of rules met (`rules_met`), and a brevity score, so a
rubric can give partial credit or punish rambling on its own terms.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from harness.checks.result import CheckResult

WORD = re.compile(r"[A-Za-z0-9']+")
SENTENCE_END = re.compile(r"[.!?]+(?:\s|$)")


def _words(text: str) -> list[str]:
    return WORD.findall(text)


def _bullets(answer: str, spec: dict[str, Any]) -> bool:
    lines = [ln.strip() for ln in answer.strip().splitlines() if ln.strip()]
    return len(lines) == spec["n"] and all(ln.startswith("- ") and len(ln) > 2 for ln in lines)


def _sentences(answer: str, spec: dict[str, Any]) -> bool:
    text = answer.strip()
    if not text or "\n-" in text or text.startswith("-"):
        return False
    ends = SENTENCE_END.findall(text)
    return len(ends) == spec["n"] and bool(SENTENCE_END.search(text[-2:] + " "))


def _first_word(answer: str) -> str:
    words = _words(answer)
    return words[0].lower() if words else ""


def _last_word(answer: str) -> str:
    words = _words(answer)
    return words[-1].lower() if words else ""


RULES: dict[str, Callable[[str, dict[str, Any]], bool]] = {
    "bullets": _bullets,
    "sentences": _sentences,
    "max_words": lambda a, s: 0 < len(_words(a)) <= s["n"],
    "lowercase": lambda a, s: bool(a.strip()) and a == a.lower(),
    # case-insensitive, so "start with Indeed" and "write in lowercase" can hold together
    "starts_with": lambda a, s: _first_word(a) == s["word"].lower(),
    "ends_with": lambda a, s: _last_word(a) == s["word"].lower(),
    "no_commas": lambda a, s: bool(a.strip()) and "," not in a,
}


def check_format_rules(spec: dict[str, Any], answer: str) -> CheckResult:
    met = {r["rule"]: RULES[r["rule"]](answer, r) for r in spec["rules"]}
    n_words = len(_words(answer))
    scores = {f"rule_{k}": float(v) for k, v in met.items()}
    scores["rules_met"] = sum(met.values()) / len(met)
    scores["brevity"] = 1.0 if n_words <= 60 else max(0.0, 1 - (n_words - 60) / 120)
    failed = [k for k, v in met.items() if not v]
    ok = not failed and n_words > 0
    partial = 1.0 if ok else scores["rules_met"] * scores["brevity"]
    return CheckResult("format_rules", ok, partial, scores, ",".join(failed))
