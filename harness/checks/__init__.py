"""Checks: what the model wrote, judged against a task's hidden ``check`` spec.

Every check returns a ``CheckResult`` (``result.py``). The harness records it as an
``x.check`` event beside the answer, which is what the contract's criteria read. The
checks are pure functions of (spec, answer), except ``python_tests``, which runs the
answer behind an operating-system boundary (``sandbox.py``) and compares what it returned
outside it; that is why they take a batch.

Kinds: ``python_tests`` (coding: hidden unit tests), ``ui_spec`` (genui: JSON Schema and
the components asked for), ``tool_call`` (agent: the allowlisted tool's JSON Schema and
the arguments asked for), ``format_rules`` (chat: format and length rules),
``answer_rules`` (the general set: one right short answer).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.checks import answers, formats, schemas
from harness.checks.result import CheckResult, extract_block
from harness.checks.sandbox import CodeSandbox, run_python_tests

__all__ = ["CheckResult", "extract_block", "run_checks"]

PURE_CHECKS = {
    "ui_spec": schemas.check_ui_spec,
    "tool_call": schemas.check_tool_call,
    "format_rules": formats.check_format_rules,
    "answer_rules": answers.check_answer_rules,
}
KINDS = ("python_tests", *PURE_CHECKS)


def run_checks(specs: Sequence[dict[str, Any]], answers: Sequence[str],
               sandbox: CodeSandbox | None = None) -> list[CheckResult]:
    """One result per (spec, answer), in order; each code answer runs in a sandbox of its
    own (``sandbox``: the boundary and limits; default: bubblewrap, refusing to run
    without it).

    Raises:
        ValueError: a spec of an unknown kind.
        SandboxUnavailable: code answers and no boundary to run them behind.
    """
    unknown = sorted({s.get("kind", "?") for s in specs} - set(KINDS))
    if unknown:
        raise ValueError(f"unknown check kind(s) {unknown} (known: {', '.join(KINDS)})")
    results: dict[int, CheckResult] = {}
    code = [i for i, s in enumerate(specs) if s["kind"] == "python_tests"]
    jobs = [{"code": extract_block(answers[i]), "entry": specs[i]["entry"],
             "tests": specs[i]["tests"]} for i in code]
    for i, raw in zip(code, run_python_tests(jobs, sandbox), strict=True):
        results[i] = _code_result(raw, len(specs[i]["tests"]))
    for i, spec in enumerate(specs):
        if i not in results:
            results[i] = PURE_CHECKS[spec["kind"]](spec, answers[i])
    return [results[i] for i in range(len(specs))]


def _code_result(raw: dict[str, Any], n_tests: int) -> CheckResult:
    passed = sum(raw["results"])
    scores = {
        "compiled": float(bool(raw["compiled"])),
        "defined": float(bool(raw["defined"])),
        "tests_passed": passed / n_tests,
        "timed_out": float(raw["error"] == "timeout"),
    }
    ok = bool(raw["results"]) and all(raw["results"])
    detail = "" if ok else str(raw["error"] or "wrong output")
    return CheckResult("python_tests", ok, scores["tests_passed"], scores, detail)
