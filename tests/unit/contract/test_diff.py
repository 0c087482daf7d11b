"""The semantic diff finds each kind of change and ignores what carries no meaning."""

from __future__ import annotations

from contract.diff import diff_contracts
from contract.document import parse_contract
from tests.unit.contract.factories import EXAMPLE

BASE = EXAMPLE.read_text()


def diff_after(**replace: str):  # type: ignore[no-untyped-def]
    text = BASE
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new, 1)
    return diff_contracts(parse_contract(BASE), parse_contract(text))


def test_identical_documents_have_no_changes() -> None:
    result = diff_contracts(parse_contract(BASE), parse_contract(BASE + "\n# a comment\n"))
    assert result.empty
    assert result.render() == "no semantic changes (identical content hash)"


def test_criteria_added_removed_reweighted_and_rewritten() -> None:
    result = diff_after(
        **{
            'id = "brevity"': 'id = "concise"',
            'weight = 3.0\ndescription = "Mean': 'weight = 4.0\ndescription = "Mean',
            "'abandoned' ? 0.25": "'abandoned' ? 0.3",
        }
    )
    assert [c.path for c in result.of_kind("evaluation", "criterion", "added")] == [
        "evaluation.criteria.concise"
    ]
    assert [c.path for c in result.of_kind("evaluation", "criterion", "removed")] == [
        "evaluation.criteria.brevity"
    ]
    [reweighted] = result.of_kind("evaluation", "criterion", "reweighted")
    assert (reweighted.path, reweighted.old, reweighted.new) == (
        "evaluation.criteria.helpfulness.weight",
        3.0,
        4.0,
    )
    assert "30% -> 36%" in reweighted.note
    [rewritten] = result.of_kind("evaluation", "criterion", "expression_changed")
    assert "0.3" in rewritten.new and "0.25" in rewritten.old
    text = result.render()
    assert "+ criterion concise weight 1" in text
    assert "- criterion brevity" in text
    assert "~ criterion helpfulness reweighted 3 -> 4" in text


def test_gates_aggregation_split_and_applicability() -> None:
    result = diff_after(
        **{
            "startsWith('shell')": "startsWith('sh')",
            'aggregation = "weighted_mean"': 'aggregation = "min"',
            "held_out_fraction = 0.1": "held_out_fraction = 0.2",
            "specialists = []": 'specialists = ["coding"]',
        }
    )
    assert [c.path for c in result.of_kind("evaluation", "gate", "expression_changed")] == [
        "evaluation.gates.no_shell.expression"
    ]
    settings = {c.path: (c.old, c.new) for c in result.of_kind("evaluation", "setting", "changed")}
    assert settings["evaluation.aggregation"] == ("weighted_mean", "min")
    assert settings["evaluation.split.held_out_fraction"] == (0.1, 0.2)
    assert settings["evaluation.applies_to.specialists"] == ([], ["coding"])


def test_harness_changes() -> None:
    result = diff_after(
        **{
            '"ui.render"]': '"ui.render", "shell.exec"]',
            '"web.fetch", "files.read"': '"files.read"',
            'tools = ["web.search", "web.fetch"]': 'tools = ["web.search"]',
            'base_model = "hcp-tiny"': 'base_model = "hcp-small"',
            "[harness.specialists.genui]": "[harness.specialists.voice]\n\n[harness.specialists.genui]",
            "min_confidence = 0.35": "min_confidence = 0.5",
        }
    )
    assert [c.new for c in result.of_kind("harness", "tool", "added")] == ["shell.exec"]
    assert [c.old for c in result.of_kind("harness", "tool", "removed")] == ["web.fetch"]
    assert [c.path for c in result.of_kind("harness", "specialist", "added")] == ["harness.specialists.voice"]
    settings = {c.path: (c.old, c.new) for c in result.of_kind("harness", "setting", "changed")}
    assert settings["harness.base_model"] == ("hcp-tiny", "hcp-small")
    assert settings["harness.router.min_confidence"] == (0.35, 0.5)
    [narrowed] = result.of_kind("harness", "specialist", "changed")
    assert narrowed.path == "harness.specialists.chat.tools"
    assert "+ tool shell.exec allowed" in result.render()


def test_training_changes() -> None:
    result = diff_after(
        **{
            'eligible = "!truncated && ': 'eligible = "',
            "min_new_rewards = 50": "min_new_rewards = 80",
            "genui]\nmin_new_rewards = 20\n": "genui]\nenabled = false\n",
        }
    )
    [eligible] = result.of_kind("training", "setting", "changed")
    assert eligible.path == "training.eligible"
    triggers = {c.path: (c.old, c.new) for c in result.of_kind("training", "trigger", "changed")}
    assert triggers["training.triggers.chat.min_new_rewards"] == (50, 80)
    assert triggers["training.triggers.genui.enabled"] == (True, False)
    assert triggers["training.triggers.genui.min_new_rewards"] == (20, None)
    json_body = result.to_json()
    assert json_body["old_hash"] != json_body["new_hash"]
    assert {c["section"] for c in json_body["changes"]} == {"training"}
