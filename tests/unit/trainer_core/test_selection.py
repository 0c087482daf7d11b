"""Which of k answers to the same prompt train (pure): rejection sampling keeps the best
passing ones, best_worst makes one preference pair; the split keeps all k on one side."""

from __future__ import annotations

import pytest

from contract.evaluate import split_for
from contract.sections import Split
from trainer.ml.data import TrainingExample, preference_pairs, select_answers
from trainer.ml.hyper import HyperParams
from trainer.ml.prompts import render_messages

CONTEXT = (("system", "Answer in JSON."), ("user", "Make a button."))


def answer(subject: str, text: str, reward: float, prompt: str = "Make a button.") -> TrainingExample:
    context = CONTEXT if prompt == "Make a button." else None
    return TrainingExample(prompt, text, reward, 1.0, subject, context)


K_ANSWERS = [answer("s1", "{a}", 1.0), answer("s2", "{a}", 1.0), answer("s3", "{bb}", 1.0),
             answer("s4", "{ccc}", 1.0), answer("s5", "nope", 0.2),
             answer("t1", "x", 0.4, prompt="Other."), answer("t2", "y", 0.1, prompt="Other.")]


def test_best_of_k_keeps_the_best_distinct_passing_answers_per_prompt():
    kept = select_answers(K_ANSWERS, "best_of_k", keep_per_prompt=2, min_reward=1.0)
    assert [(e.prompt, e.response) for e in kept] == [("Make a button.", "{a}"), ("Make a button.", "{bb}")]


def test_a_prompt_without_a_passing_answer_trains_nothing():
    assert all(e.prompt != "Other." for e in select_answers(K_ANSWERS, "best_of_k", 2, 1.0))
    assert len(select_answers(K_ANSWERS, "all", 2, 1.0)) == len(K_ANSWERS)


def test_best_worst_makes_one_preference_pair_per_prompt():
    kept = select_answers(K_ANSWERS, "best_worst", keep_per_prompt=1, min_reward=0.3)
    assert sorted((e.prompt, e.response) for e in kept) == [
        ("Make a button.", "nope"), ("Make a button.", "{a}"), ("Other.", "x"), ("Other.", "y")]
    pairs = preference_pairs(kept, min_reward=0.3)
    assert {(c.response, r.response) for c, r, _ in pairs} == {("{a}", "nope"), ("x", "y")}


def test_hyper_parameters_are_checked_and_epochs_set_the_steps():
    assert HyperParams(epochs=3, batch_size=8).steps_for(20) == 8
    assert HyperParams(steps=5).steps_for(1000) == 5
    for bad in ({"selection": "best"}, {"keep_per_prompt": 0}, {"precision": "fp8"},
                {"objective": "ppo"}):
        with pytest.raises(ValueError):
            HyperParams(**bad)


def test_splitting_on_the_user_text_puts_every_sample_of_a_prompt_on_one_side():
    rule = Split(held_out_fraction=0.5, seed=7, by="user_text")
    sides = {split_for(rule.key(f"subject-{i}", "Make a button."), 0.5, 7) for i in range(50)}
    assert len(sides) == 1
    by_subject = {split_for(Split().key(f"subject-{i}", "Make a button."), 0.5, 7) for i in range(50)}
    assert by_subject == {"train", "held_out"}
    assert "by" not in Split().model_dump() and Split(by="user_text").model_dump()["by"] == "user_text"


def test_a_tokenizer_without_a_chat_template_gets_a_plain_transcript():
    class Plain:
        chat_template = None

    text = render_messages(Plain(), [{"role": "system", "content": "Be brief."},
                                     {"role": "user", "content": "Hi"}])
    assert text == "System: Be brief.\nUser: Hi\nAssistant: "
