"""Judging a coding answer outside the candidate's process: what its syntax tree says,
and its returned values against the expected ones (which never enter the sandbox)."""

from __future__ import annotations

import ast
from typing import Any, Protocol

MAX_CODE_CHARS = 65_536


class Returned(Protocol):
    """What came back from one candidate (``sandbox.Outcome``)."""

    @property
    def values(self) -> tuple[dict[str, Any], ...]: ...

    @property
    def failed(self) -> str | None: ...


def static_facts(code: str, entry: str) -> tuple[bool, bool, str | None]:
    """(compiles, defines ``entry`` at top level, the syntax error), from the syntax tree:
    nothing the candidate runs can change them."""
    if len(code) > MAX_CODE_CHARS:
        return False, False, f"code longer than {MAX_CODE_CHARS} characters"
    try:
        tree = ast.parse(code, "<candidate>")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return False, False, f"{type(exc).__name__}: {str(exc)[:200]}"
    return True, entry in _top_level_names(tree), None


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def judge(job: dict[str, Any], facts: tuple[bool, bool, str | None], outcome: Returned | None
          ) -> dict[str, Any]:
    """{"compiled", "defined", "results": [bool per test], "error"} for one job."""
    compiled, defined, syntax_error = facts
    if outcome is None:
        return {"compiled": compiled, "defined": defined, "results": [], "error": syntax_error}
    if outcome.failed is not None:
        return {"compiled": compiled, "defined": defined, "results": [], "error": outcome.failed}
    results, error = [], None
    for test, got in zip(job["tests"], outcome.values, strict=False):
        passed = isinstance(got, dict) and "value" in got and got["value"] == test["expected"]
        results.append(bool(passed))
        if error is None and isinstance(got, dict) and "raised" in got:
            error = str(got["raised"])[:64]
    results += [False] * (len(job["tests"]) - len(results))
    return {"compiled": compiled, "defined": defined, "results": results, "error": error}
