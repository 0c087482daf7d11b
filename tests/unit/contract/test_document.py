"""Parsing, validation with every problem listed, normalisation and the content hash."""

from __future__ import annotations

import tomllib

import jsonschema
import pytest

from contract.document import (
    ContractInvalid,
    canonical_form,
    content_hash,
    contract_json_schema,
    dump_toml,
    parse_contract,
)
from tests.unit.contract.factories import EXAMPLE, minimal


def problems_of(text: str) -> list:
    with pytest.raises(ContractInvalid) as caught:
        parse_contract(text)
    return caught.value.problems


def test_the_example_contract_is_valid_and_complete() -> None:
    doc = parse_contract(EXAMPLE.read_text())
    assert doc.name == "default"
    assert len(doc.evaluation.criteria) == 5
    assert doc.evaluation.gates
    assert set(doc.training.triggers) == {"chat", "agent", "coding", "genui"}
    assert doc.harness.allows("python.run", "coding")
    assert not doc.harness.allows("python.run", "chat")


def test_toml_syntax_error_has_line_and_column() -> None:
    [problem] = problems_of('[contract]\nname = "x"\ndescription = \n')
    assert problem.kind == "toml"
    assert (problem.line, problem.column) == (3, 15)


def test_every_problem_is_listed_at_once() -> None:
    text = minimal(
        **{
            "weight = 1.0": "weight = 0",
            'subject = "episode"': 'subject = "session"',
            "tool_calls.all(c, c.allowed)": "tool_calls.all(c, c.allowed) &&",
            'id = "discipline"': 'id = "helpfulness"',
            'default_specialist = "chat"': 'default_specialist = "support"',
            "schema_version = 1": 'schema_version = 1\nauthor = "me"',
        }
    )
    problems = problems_of(text)
    by_path = {p.path: p for p in problems}
    assert by_path["evaluation.subject"].kind == "schema"
    assert "turn" in by_path["evaluation.subject"].message
    assert by_path["evaluation.criteria[1].weight"].kind == "schema"
    assert by_path["evaluation.criteria[1].id"].kind == "duplicate"
    assert by_path["harness.router.default_specialist"].kind == "reference"
    assert by_path["contract.author"].message.startswith("unknown key")
    expression = by_path["evaluation.criteria[1].expression"]
    assert expression.kind == "expression"
    assert "'helpfulness'" in expression.message  # the criterion, by id
    assert expression.expression == "tool_calls.all(c, c.allowed) && ? 1.0 : 0.0"
    assert (expression.expression_line, expression.expression_column) == (1, 33)
    assert all(p.line for p in problems)  # each located in the TOML text
    assert len(problems) == 6


def test_unknown_names_in_expressions_are_refused_with_position() -> None:
    problems = problems_of(minimal(**{"feedback.count > 0": "feedbak.count > 0"}))
    [problem] = problems
    assert "unknown variable 'feedbak'" in problem.message
    assert (problem.expression_line, problem.expression_column) == (1, 1)
    problems = problems_of(minimal(**{"tool_calls.all": "tool_calls.every"}))
    assert "unknown function 'every'" in problems[0].message


def test_eligibility_sees_the_result_but_criteria_do_not() -> None:
    problems = problems_of(minimal(**{"feedback.count > 0 ?": "score > 0.5 ?"}))
    assert problems[0].path == "evaluation.criteria[0].expression"
    assert "unknown variable 'score'" in problems[0].message


def test_cross_references_are_checked() -> None:
    text = minimal(
        **{
            'tools = ["files.read"]': 'tools = ["shell.exec"]',
            "[training]": (
                '[evaluation.applies_to]\nspecialists = ["genui"]\nevent_types = ["turn.bogus"]\n\n[training]'
            ),
        }
    ) + (
        "\n[training.triggers.coding]\nmin_new_rewards = 10\n"
        "regression_tolerance = { brevity = 0.1 }\n"
        "[training.triggers.genui]\nenabled = true\n"
    )
    messages = " | ".join(f"{p.path}: {p.message}" for p in problems_of(text))
    assert "harness.specialists.coding.tools: tool 'shell.exec'" in messages
    assert "specialist 'genui' is not declared" in messages
    assert "unknown event type 'turn.bogus'" in messages
    assert "regression tolerance for unknown criterion 'brevity'" in messages
    assert "trigger for 'genui'" in messages
    assert "needs min_new_rewards, reward_floor or schedule" in messages


def test_bad_schedule_is_refused() -> None:
    text = minimal() + '\n[training.triggers.chat]\nschedule = "0 25 * * *"\n'
    [problem] = problems_of(text)
    assert problem.path == "training.triggers.chat.schedule"
    assert "hour" in problem.message


REFORMATTED = """
# same contract, reformatted: comments, key order, criteria order, spacing, defaults
[training]
eligible   =   "score >= 0.5"
[evaluation]
aggregation = "weighted_mean"      # the default, written out
subject = "episode"
[[evaluation.criteria]]
expression = '''
  tool_calls.all(c, c.allowed) ? 1.0 : 0.0
'''
weight = 1
id = "discipline"
[[evaluation.criteria]]
weight = 3.0
id = "helpfulness"
expression = "feedback.count > 0 ? (feedback.rating + 1.0) / 2.0 : 0.5"
[harness]
tool_allowlist = ["web.search", "files.read", "web.search"]
base_model = "hcp-tiny"
router = { default_specialist = "chat", strategy = "learned" }
specialists = { coding = { tools = ["files.read"] }, chat = {} }
[contract]
schema_version = 1
description = "smallest useful contract"
name = "mini"
"""


def test_hash_is_stable_under_reformatting() -> None:
    original = parse_contract(minimal())
    reformatted = parse_contract(REFORMATTED)
    assert canonical_form(original) == canonical_form(reformatted)
    assert content_hash(original) == content_hash(reformatted)
    assert len(content_hash(original)) == 64


def test_hash_changes_with_meaning() -> None:
    original = content_hash(parse_contract(minimal()))
    assert content_hash(parse_contract(minimal(**{"weight = 3.0": "weight = 2.0"}))) != original
    assert content_hash(parse_contract(minimal(**{"0.5": "0.4"}))) != original


def test_gate_settings_added_later_leave_earlier_documents_hashing_as_before() -> None:
    doc = parse_contract(EXAMPLE.read_text())
    assert "gate_metric" not in canonical_form(doc)  # what every earlier version was hashed from
    explicit = EXAMPLE.read_text().replace(
        "gate_margin = 0.02\n", 'gate_margin = 0.02\ngate_metric = "offline"\nrollout_max_new_tokens = 24\n')
    assert explicit != EXAMPLE.read_text()
    assert content_hash(parse_contract(explicit)) == content_hash(doc)
    rollout = parse_contract(explicit.replace('"offline"', '"rollout"'))
    assert rollout.training.triggers["coding"].gate_metric == "rollout"
    assert content_hash(rollout) != content_hash(doc)
    assert content_hash(parse_contract(dump_toml(rollout))) == content_hash(rollout)


def test_dump_round_trips_to_the_same_hash() -> None:
    doc = parse_contract(EXAMPLE.read_text())
    assert content_hash(parse_contract(dump_toml(doc))) == content_hash(doc)


def test_json_schema_accepts_the_example_and_rejects_a_typo() -> None:
    schema = contract_json_schema()
    data = tomllib.loads(EXAMPLE.read_text())
    jsonschema.validate(data, schema)
    data["evaluation"]["aggregaton"] = "min"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema)


def _with_criteria(count: int) -> str:
    extra = "".join(f'\n[[evaluation.criteria]]\nid = "c{i}"\nweight = 1.0\nexpression = "1.0"\n'
                    for i in range(count - 2))
    return minimal().replace("[training]", extra + "\n[training]")


def test_criteria_per_contract_are_capped() -> None:
    from contract.checks import MAX_CRITERIA

    parse_contract(_with_criteria(MAX_CRITERIA))
    [problem] = problems_of(_with_criteria(MAX_CRITERIA + 1))
    assert (problem.kind, problem.path) == ("limit", "evaluation.criteria")
    assert f"limit of {MAX_CRITERIA}" in problem.message


def test_a_document_over_the_size_limit_is_refused_before_parsing() -> None:
    from contract.document import MAX_DOCUMENT_BYTES

    text = minimal() + "#" * MAX_DOCUMENT_BYTES + "\n[[[ not toml"
    [problem] = problems_of(text)
    assert problem.kind == "limit" and str(MAX_DOCUMENT_BYTES) in problem.message
