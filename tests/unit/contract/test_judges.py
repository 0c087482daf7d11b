"""Judge criteria, the pure half: the section, the prompt and its hash, reading verdicts,
and a subject judged with given verdicts."""

from __future__ import annotations

import pytest

from contract.document import content_hash, parse_contract
from contract.evaluate import compile_contract
from contract.inputs import build_input
from contract.judged import evaluate_judged, requests
from contract.judges import Judge, Verdict, read, render
from contract.problems import ContractInvalid
from tests.unit.contract.factories import Stream, minimal

MODEL = "sha256:" + "ab" * 32
JUDGE = f'''
[[evaluation.judges]]
id = "quality"
model = "{MODEL}"
system = "You grade answers."
prompt = """Question: {{{{user_text}}}}
Answer: {{{{assistant_text}}}}
Score 1 to 10."""

[[evaluation.criteria]]
id = "judged"
weight = 2.0
expression = "judge.quality.score"
'''


def judged_text(judge: str = JUDGE) -> str:
    return minimal("turn", **{"[training]": judge + "\n[training]"})


def turn_subject(user: str = "What is 2+2?", answer: str = "4"):
    from contract.subject import finished_subjects

    stream = Stream(specialist="chat")
    stream.turn(user, answer)
    stream.add("turn.user", text="thanks")
    return finished_subjects(stream.events, "turn")[0]


def test_a_contract_without_judges_keeps_its_hash_and_one_with_them_parses() -> None:
    plain = parse_contract(minimal("turn"))
    assert "judges" not in plain.model_dump(mode="json")["evaluation"]
    doc = parse_contract(judged_text())
    assert doc.evaluation.judges[0].model == MODEL
    assert content_hash(doc) != content_hash(plain)


@pytest.mark.parametrize(("change", "says"), [
    ("judge.quality.score", None),
    ("judge.qualty.score", "no field 'qualty'"),
    ("judge.quality.scor", "no field 'scor'"),
])
def test_a_misspelt_judge_is_refused_at_validation(change: str, says: str | None) -> None:
    text = judged_text(JUDGE.replace('"judge.quality.score"', f'"{change}"'))
    if says is None:
        parse_contract(text)
        return
    with pytest.raises(ContractInvalid) as caught:
        parse_contract(text)
    assert says in str(caught.value.problems)


def test_applies_to_cannot_read_the_judge_and_a_prompt_names_only_known_fields() -> None:
    with pytest.raises(ContractInvalid, match="unknown variable 'judge'"):
        when = '[evaluation.applies_to]\nwhen = "judge.quality.score > 0.0"\n\n'
        first = '[[evaluation.criteria]]\nid = "helpfulness"'
        parse_contract(judged_text().replace(first, when + first, 1))
    with pytest.raises(ContractInvalid, match="prompt names"):
        parse_contract(judged_text(JUDGE.replace("{{assistant_text}}", "{{answer}}")))
    with pytest.raises(ContractInvalid, match="declared twice"):
        parse_contract(judged_text(JUDGE + JUDGE.split("[[evaluation.criteria]]")[0]))


def test_the_prompt_is_rendered_from_the_subject_and_hashed_with_its_budget() -> None:
    judge = parse_contract(judged_text()).evaluation.judges[0]
    subject_input = build_input(turn_subject(), parse_contract(judged_text()).harness)
    request = render(judge, subject_input)
    assert request.messages == (("system", "You grade answers."),
                                ("user", "Question: What is 2+2?\nAnswer: 4\nScore 1 to 10."))
    assert request.prompt_hash == render(judge, subject_input).prompt_hash
    other = render(judge.model_copy(update={"max_tokens": 17}), subject_input)
    assert other.prompt_hash != request.prompt_hash
    changed = render(judge, build_input(turn_subject(answer="5"), parse_contract(judged_text()).harness))
    assert changed.prompt_hash != request.prompt_hash


@pytest.mark.parametrize(("raw", "score", "error"), [
    ("7", 6 / 9, None),
    ("Score: 10/10", 1.0, None),
    ("I'd say 1.", 0.0, None),
    ("great answer", None, "holds 0 number(s)"),
    ("42", None, "outside the scale"),
])
def test_a_number_verdict_is_read_on_its_scale(raw: str, score: float | None, error: str | None) -> None:
    judge = Judge(id="q", model=MODEL, prompt="{{assistant_text}}")
    reading = read(judge, raw)
    assert reading.score == (pytest.approx(score) if score is not None else None)
    assert (error is None) == (reading.error is None)
    if error:
        assert error in (reading.error or "")


def test_a_choice_verdict_takes_the_first_word_named() -> None:
    judge = Judge(id="q", model=MODEL, prompt="{{assistant_text}}", parse="choice",
                  choices={"yes": 1.0, "no": 0.0})
    assert read(judge, "Yes. It is not wrong, no.").score == 1.0
    assert read(judge, "No, yes is not it").score == 0.0
    assert read(judge, "nothing").error is not None  # "no" inside "nothing" is not the word


def test_a_relative_judge_reads_one_number_per_answer() -> None:
    judge = Judge(id="r", model=MODEL, mode="relative", scale=(0, 10),
                  prompt="Rank {{count}} answers to {{user_text}}:\n{{answers}}")
    stream = Stream(specialist="chat")
    stream.turn("Name a prime", "9")
    stream.turn("name a prime", "7")
    stream.add("episode.completed", outcome="success")
    from contract.subject import finished_subjects

    doc = parse_contract(minimal("episode"))
    subject_input = build_input(finished_subjects(stream.events, "episode")[0], doc.harness)
    request = render(judge, subject_input)
    assert request.answers == 2 and "Answer 1:\n9\n\nAnswer 2:\n7" in request.messages[-1][1]
    assert read(judge, "Answer 1: 3, Answer 2: 8", request.answers).scores == (0.3, 0.8)
    assert read(judge, "2: 8\n1: 3", request.answers).scores == (0.3, 0.8)
    reading = read(judge, "2 9", request.answers)
    assert reading.scores == (0.2, 0.9) and reading.score == 0.9
    assert read(judge, "8", request.answers).error is not None


def test_a_subject_is_scored_with_its_verdict_and_records_it() -> None:
    compiled = compile_contract(parse_contract(judged_text()))
    subject_input = build_input(turn_subject(), compiled.document.harness)
    [request] = requests(compiled, subject_input)
    evaluation = evaluate_judged(compiled, subject_input, {"quality": Verdict("10", "e-1")})
    assert evaluation.components["judged"] == 1.0 and evaluation.score is not None
    [record] = evaluation.judgements
    assert record == {"judge": "quality", "model": MODEL, "prompt_hash": request.prompt_hash,
                      "seed": 0, "verdict": "10", "verdict_event": "e-1", "score": 1.0,
                      "scores": None, "error": None}
    assert evaluation.to_json()["judgements"] == [record]


def test_a_verdict_that_does_not_parse_is_an_error_with_no_score() -> None:
    compiled = compile_contract(parse_contract(judged_text()))
    subject_input = build_input(turn_subject(), compiled.document.harness)
    evaluation = evaluate_judged(compiled, subject_input, {"quality": Verdict("splendid")})
    assert evaluation.score is None and not evaluation.eligible
    assert evaluation.errors[0].item == "judge:quality" and evaluation.errors[0].kind == "judge"
    assert "'splendid'" in evaluation.errors[0].message
    assert evaluation.judgements[0]["verdict"] == "splendid"


def test_a_subject_the_contract_does_not_apply_to_needs_no_verdict() -> None:
    compiled = compile_contract(parse_contract(judged_text()))
    stream = Stream(specialist="chat")
    stream.add("session.started")
    stream.add("episode.completed", outcome="success")
    from contract.subject import finished_subjects

    subject = finished_subjects(stream.events, "episode")[0]
    assert requests(compiled, build_input(subject, compiled.document.harness)) == []


def test_a_judge_may_give_an_unreadable_verdict_a_score_and_the_record_says_why() -> None:
    text = judged_text(JUDGE.replace('Score 1 to 10."""', 'Score 1 to 10."""\nunreadable = 0.5'))
    compiled = compile_contract(parse_contract(text))
    subject_input = build_input(turn_subject(), compiled.document.harness)
    evaluation = evaluate_judged(compiled, subject_input, {"quality": Verdict("splendid")})
    assert evaluation.score is not None and evaluation.components["judged"] == 0.5
    assert evaluation.judgements[0]["error"] and evaluation.judgements[0]["score"] == 0.5
    plain = parse_contract(judged_text()).evaluation.judges[0]
    assert "unreadable" not in plain.model_dump(mode="json")  # the hash of judges without it
