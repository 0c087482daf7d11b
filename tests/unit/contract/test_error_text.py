"""Rubric errors without event text: the CEL library's messages can quote the value an
expression failed on; the rubric's own messages name types and limits only."""

from __future__ import annotations

from contract.error_text import message_without_event_text, names_no_event_text, without_event_text
from contract.rubric import as_score, compile_expression, evaluate
from evaluators.reevaluation_model import Tally, error_summary, error_without_event_text

SECRET = "the user's card is 4111"


def failed(expression: str) -> dict[str, str]:
    value = evaluate(compile_expression(expression, ["t"]), {"t": {"text": SECRET}})
    error = as_score(value, "criterion:c")
    assert not isinstance(error, float)
    return error.to_json()  # type: ignore[union-attr]


def test_a_message_quoting_the_payload_is_withheld_with_its_item_and_kind_kept() -> None:
    for expression in ("{'x': 1.0}[t.text]", "duration(t.text) > duration('1s') ? 1.0 : 0.0"):
        error = failed(expression)
        assert SECRET in error["message"] or "4111" in error["message"]
        shown = without_event_text(error)
        assert "4111" not in shown["message"] and "withheld" in shown["message"]
        assert (shown["item"], shown["kind"]) == ("criterion:c", "runtime")


def test_the_rubrics_own_messages_are_shown_whole() -> None:
    for expression in ("t.text", "size(t.text) / 0 > 1 ? 1.0 : 0.0"):
        error = failed(expression)
        assert names_no_event_text(error["message"]), error
        assert without_event_text(error) == error
    assert not names_no_event_text("score 4111.0 is outside [0, 1]")  # the value is the subject's


def test_a_jobs_summary_keeps_its_counts_and_withholds_its_example() -> None:
    quoted = error_summary(Tally(1, 2, 0, f"criterion:c: no such key: '{SECRET}'"))
    shown = error_without_event_text(quoted)
    assert shown is not None and shown.startswith("2 of 3 applicable subjects errored (e.g. criterion:c: ")
    assert "4111" not in shown
    budget = error_summary(Tally(0, 1, 0, "criterion:c: evaluation deadline exceeded"))
    assert error_without_event_text(budget) == budget
    assert error_without_event_text("ContractInvalid: bad TOML") == "ContractInvalid: bad TOML"
    assert error_without_event_text(None) is None
    assert message_without_event_text("", "evaluation deadline exceeded") == "evaluation deadline exceeded"
