"""What the user did next, as rubric inputs: regenerations, rephrased repeats, disputes,
corrections and tool errors, derived from the log alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from contract.document import parse_contract
from contract.evaluate import compile_contract, evaluate_subject
from contract.inputs import build_input
from contract.signals import disputes, reaction, similarity_of
from contract.subject import finished_subjects
from tests.unit.contract.factories import Stream, minimal_doc

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "contracts" / "chat-signals.toml"


@pytest.mark.parametrize(("question", "then", "regenerated", "rephrased", "contradicted"), [
    ("How do I sort a list in Python?", "how do i  sort a list in python?", True, False, False),
    ("How do I sort a list in Python?", "how to sort a python list", False, True, False),
    ("How do I sort a list in Python?", "How do I sort it in reverse?", False, False, False),
    ("What is 2+2?", "No, that's wrong.", False, False, True),
    ("Fix my loop", "It still doesn't work", False, False, True),
    ("Fix my loop", "That’s not what I asked", False, False, True),
    ("Fix my loop", "No problem, thanks!", False, False, False),
    ("Fix my loop", "Thanks, that works", False, False, False),
])
def test_a_next_message_is_read_as_the_user_meant_it(question: str, then: str, regenerated: bool,
                                                      rephrased: bool, contradicted: bool) -> None:
    found = reaction(question, True, then)
    assert (found.regenerated, found.rephrased, found.contradicted) == (
        regenerated, rephrased, contradicted)


def test_similarity_is_the_jaccard_index_of_content_words() -> None:
    assert similarity_of("How do I sort a list in Python?", "how to sort a python list") == 1.0
    assert similarity_of("How do I sort a list in Python?", "How do I sort it in reverse?") == 0.25
    assert similarity_of("", "") == 1.0 and disputes("nope") and not disputes("nopes, I see")


def test_an_unanswered_turn_or_one_nobody_answered_has_no_reaction() -> None:
    assert reaction("hi", False, "hi").similarity is None
    assert reaction("hi", True, None) == reaction("x", True, None)


def chat() -> Stream:
    s = Stream("chat-1", specialist="chat")
    s.add("session.started", harness="hcp-gateway")
    s.turn("How do I sort a list in Python?", "Use sorted(xs).")
    s.turn("how to sort a python list", "xs.sort() sorts in place.")  # asked again
    s.add("feedback.given", correction="sorted(xs) returns a new list; xs.sort() sorts xs.")
    s.turn("No, that's wrong: I want it descending.", "sorted(xs, reverse=True)")
    s.add("tool.called", call_id="c1", tool="python.run", arguments={})
    s.add("tool.result", call_id="c1", ok=False, error="SyntaxError")
    return s


def test_a_turn_is_judged_by_the_message_that_closed_it() -> None:
    turns = finished_subjects(chat().events, "turn")
    first, second = (build_input(t, minimal_doc("turn").harness) for t in turns)
    assert first["subject"]["closed_by"] == "turn.user"
    assert first["signals"]["last"]["rephrased"] and first["signals"]["rephrased"] == 1
    assert first["signals"]["last"]["next_user_text"] == "how to sort a python list"
    assert second["signals"]["last"]["contradicted"] and not second["signals"]["last"]["rephrased"]
    assert second["signals"]["corrected"] == 1
    assert second["signals"]["corrections"] == ["sorted(xs) returns a new list; xs.sort() sorts xs."]


def test_an_episode_counts_every_turns_reaction_and_its_tool_errors() -> None:
    s = chat()
    s.add("episode.completed", outcome="success")
    [episode] = finished_subjects(s.events, "episode")
    data = build_input(episode, minimal_doc().harness)
    signals = data["signals"]
    assert (signals["followed_up"], signals["rephrased"], signals["contradicted"]) == (2, 1, 1)
    assert signals["regenerated"] == 0 and signals["tool_errors"] == 1 and signals["corrected"] == 1
    assert [t["rephrased"] for t in data["turns"]] == [True, False, False]
    assert data["turns"][-1]["next_user_text"] is None  # the episode ended after it


def test_the_example_contract_scores_chat_turns_by_the_users_next_move() -> None:
    compiled = compile_contract(parse_contract(EXAMPLE.read_text()))
    s = chat()
    s.turn("Thanks, that works.", "Glad to help.")
    s.add("session.expired", idle_timeout_s=1800, last_seq=len(s.events), last_event_at="x")
    scores = [evaluate_subject(compiled, build_input(t, compiled.document.harness))
              for t in finished_subjects(s.events, "turn")]
    assert [list(e.errors) for e in scores] == [[], [], [], []]
    # asked again in other words; corrected, then disputed; its tool failed; kept, then idle
    assert [e.components["kept"] for e in scores] == [0.25, 1.0, 1.0, 1.0]
    assert [e.components["undisputed"] for e in scores] == [1.0, 0.0, 1.0, 1.0]
    assert scores[2].components["tools_worked"] == 0.0
    assert scores[3].score == pytest.approx(1.0 - 2.0 * 0.5 / 9.0)
    assert [e.eligible for e in scores] == [True, True, True, False]
