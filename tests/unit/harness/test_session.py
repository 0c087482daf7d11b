"""What the harness records for an answer, and what the gate reads back (pure, no model)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from contract.document import parse_contract
from harness.checks import run_checks
from harness.router import route
from harness.serve import route_task
from harness.session import Served, answer_events, session_events, storable, task_of
from harness.tasks import draw
from harness.tasks.catalog import FAMILIES

CONTRACT = parse_contract((Path(__file__).parents[3] / "examples" / "contracts" / "harness.toml").read_text())


def _task(specialist: str):
    return draw(FAMILIES[specialist].generator, 1, 5)[0]


def test_the_example_contract_routes_every_family_to_its_specialist():
    for specialist in set(FAMILIES) - {"general"}:  # the general set is no specialist's
        for task in draw(FAMILIES[specialist].generator, 20, 3):
            assert route_task(CONTRACT.harness, task).specialist == specialist


def test_an_unroutable_message_falls_back_to_the_default_specialist():
    assert route(CONTRACT.harness, "hello there").specialist == "chat"


def test_a_coding_answer_records_the_sandbox_run_as_a_tool_call_its_check_and_outcome():
    task = _task("coding")
    entry = task.check["entry"]
    (check,) = run_checks([task.check], [f"```python\ndef {entry}(*a):\n    return None\n```"])
    kinds = [k for k, _ in answer_events(task, check)]
    assert kinds == ["tool.called", "tool.result", "x.check", "episode.completed"]
    called, result = answer_events(task, check)[:2]
    assert called[1]["tool"] == "python.run" and result[1]["ok"] is check.passed
    assert answer_events(task, check)[-1][1]["outcome"] == ("success" if check.passed else "failure")


def test_an_agent_answer_records_the_tool_the_model_called_with_its_arguments():
    task = _task("agent")
    want = task.check["expect"]
    answer = json.dumps({"tool": want["tool"], "arguments": want["arguments"]})
    (check,) = run_checks([task.check], [answer])
    assert check.passed
    called = answer_events(task, check)[0]
    assert called == ("tool.called", {"call_id": f"{task.id}:{want['tool']}", "tool": want["tool"],
                                      "arguments": want["arguments"]})


def test_a_chat_answer_calls_no_tool():
    task = _task("chat")
    (check,) = run_checks([task.check], ["Sure."])
    assert [k for k, _ in answer_events(task, check)] == ["x.check", "episode.completed"]


def test_a_session_names_specialist_adapter_and_contract_and_carries_the_task_back():
    task = _task("genui")
    (check,) = run_checks([task.check], ['{"components": []}'])
    served = Served(task, route_task(CONTRACT.harness, task), "genui@2", "harness@3", "{}", 5, check, 0)
    events = session_events(served, "hcp-harness", uuid.UUID(int=7))
    decided = next(e for e in events if e.type == "route.decided")
    assert decided.payload["specialist"] == "genui" and decided.payload["adapter_version"] == "genui@2"
    assert decided.payload["contract"] == "harness@3" and decided.contract == "harness@3"
    assert {e.stream_id for e in events} == {f"session-{uuid.UUID(int=7)}"}
    again = task_of([e.payload for e in events if e.type == "turn.user"])
    assert again is not None
    assert (again.id, again.specialist, again.prompt) == (task.id, "genui", task.prompt)
    assert again.check == task.check and again.meta == {k: task.meta[k] for k in ("template", "group")}
    assert again.messages() == task.messages()  # the gate renders exactly what was served


def test_text_the_log_cannot_store_is_replaced_before_checking():
    assert storable("a\x00b") == "a\ufffdb"
    assert storable("a\ud800b") == "a?b"
    assert storable("plain") == "plain"
