"""Candidates that try to pass their hidden tests without computing the answer. Each is a
function that returns nothing useful plus a trick; none may score. These run exactly as
the harness and the gate run every answer (the default sandbox, hook included)."""

from __future__ import annotations

import pytest

from harness.checks import run_checks
from harness.checks.sandbox import CodeSandbox, SandboxUnavailable, run_python_tests

SPEC = {"kind": "python_tests", "entry": "sq",
        "tests": [{"args": [2], "expected": 4}, {"args": [3], "expected": 9}]}

FORGERIES = {
    "json.loads equal to everything": """
import json
class Anything:
    def __eq__(self, other):
        return True
json.loads = lambda *a, **k: Anything()
def sq(x):
    return None
""",
    "an object equal to everything returned": """
class Anything:
    def __eq__(self, other):
        return True
    __hash__ = object.__hash__
def sq(x):
    return Anything()
""",
    "the expected value read from the caller's frames": """
import sys
def sq(x):
    frame = sys._getframe(1)
    while frame is not None:
        for value in frame.f_locals.values():
            if isinstance(value, dict) and "tests" in value:
                for test in value["tests"]:
                    if test.get("args") == [x]:
                        return test["expected"]
        frame = frame.f_back
    return None
""",
    "a forged result document written to the channel": """
import json, os
def sq(x):
    forged = json.dumps({"compiled": True, "defined": True, "results": [True, True],
                         "values": [{"value": True}, {"value": True}]}).encode()
    for fd in range(3, 20):
        try:
            os.write(fd, forged)
        except OSError:
            pass
    os._exit(0)
""",
    "a forged document of the new protocol, then exit": """
import json, os
def sq(x):
    os.write(1, b"")
    for fd in range(3, 20):
        try:
            os.write(fd, json.dumps({"values": [{"value": None}, {"value": None}]}).encode())
        except OSError:
            pass
    os._exit(0)
""",
    "builtins patched so every comparison holds": """
import builtins
builtins.isinstance = lambda *a: True
builtins.len = lambda *a: 0
def sq(x):
    return None
""",
}


@pytest.mark.parametrize("trick", sorted(FORGERIES))
def test_a_forgery_does_not_score(trick):
    (result,) = run_checks([SPEC], [FORGERIES[trick]])
    assert not result.passed, trick
    assert result.scores["tests_passed"] == 0.0, trick
    assert result.partial == 0.0, trick


def test_the_expected_values_never_reach_the_candidate():
    leak = ("import gc\ndef sq(x):\n"
            "    return repr([o for o in gc.get_objects() if isinstance(o, dict)])[:100000]")
    (outcome,) = CodeSandbox().call_many([(leak, "sq", [[2]])])
    (value,) = outcome.values
    assert "expected" not in str(value)


def test_a_correct_function_still_passes_next_to_the_forgeries():
    answers = [*FORGERIES.values(), "def sq(x):\n    return x * x"]
    results = run_checks([SPEC] * len(answers), answers)
    assert [r.passed for r in results] == [False] * len(FORGERIES) + [True]


def test_without_a_boundary_model_code_is_refused_unless_the_operator_opts_in():
    job = {"code": "def sq(x):\n    return x * x", "entry": "sq", "tests": SPEC["tests"]}
    with pytest.raises(SandboxUnavailable, match="HCP_UNSAFE_RUN_MODEL_CODE_WITHOUT_SANDBOX"):
        run_python_tests([job], CodeSandbox(bwrap="no-such-bwrap"))
    (result,) = run_python_tests([job], CodeSandbox(bwrap="no-such-bwrap", allow_unsandboxed=True))
    assert result["results"] == [True, True]
