"""The checks on model-written answers; the sandbox stops what a small model gets wrong
(what an adversary tries is in tests/redteam/)."""

from __future__ import annotations

from harness.checks import run_checks
from harness.checks.sandbox import CodeSandbox, SandboxLimits, run_python_tests
from harness.tasks import draw
from harness.tasks.catalog import FAMILIES

TESTS = [{"args": [2], "expected": 4}, {"args": [3], "expected": 9}]


def run(code: str) -> dict:
    sandbox = CodeSandbox(SandboxLimits(timeout_s=1.0))
    (result,) = run_python_tests([{"code": code, "entry": "sq", "tests": TESTS}], sandbox)
    return result


def test_a_correct_function_passes_every_hidden_test():
    assert run("def sq(x):\n    return x * x")["results"] == [True, True]


def test_a_wrong_function_fails_and_a_missing_one_is_not_defined():
    assert run("def sq(x):\n    return x + x")["results"] == [True, False]
    assert not run("def other(x):\n    return x")["defined"]


def test_an_endless_loop_is_killed_at_its_deadline():
    result = run("def sq(x):\n    while True:\n        pass")
    assert result["error"] == "timeout" or not any(result["results"])


def test_no_network_no_subprocess_no_file_writes():
    for body in ("import socket\n    socket.create_connection(('127.0.0.1', 80))",
                 "import subprocess\n    subprocess.run(['true'])",
                 "open('x.txt', 'w').write('x')"):
        assert not any(run(f"def sq(x):\n    {body}\n    return x * x")["results"]), body


def test_a_huge_allocation_fails_instead_of_taking_the_machine():
    assert not any(run("def sq(x):\n    a = bytearray(4 * 1024 ** 3)\n    return x * x")["results"])


def test_the_schema_checks_pass_a_right_answer_and_credit_a_near_miss():
    genui = draw(FAMILIES["genui"].generator, 1, 3)[0]
    import json

    right = json.dumps({"components": genui.check["expect"]})
    (ok, empty) = run_checks([genui.check, genui.check], [right, '{"components": []}'])
    assert ok.passed and ok.partial == 1.0
    assert not empty.passed and 0.0 <= empty.partial < 1.0 and empty.scores["schema_ok"] in (0.0, 1.0)
