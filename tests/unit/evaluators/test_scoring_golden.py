"""Scoring a fixed, varied corpus gives exactly what it gave when the expected values were
recorded (tests/unit/evaluators/scoring_corpus.py): every input variable, evaluation and
reward record, field by field. Rewrites for speed must not change a byte of any of them."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import pytest

from contract.evaluate import evaluate_subject
from contract.evaluation import Evaluation
from contract.inputs import build_input
from evaluators.model import RewardRecord
from evaluators.scoring import score_subject
from tests.unit.evaluators import scoring_corpus as corpus

_OBSERVED: dict[str, Any] = {}


def _observed() -> dict[str, Any]:
    if not _OBSERVED:
        _OBSERVED.update(corpus._as_json(corpus.observed()))
    return _OBSERVED


def _golden() -> dict[str, Any]:
    return json.loads(corpus.GOLDEN.read_text())


GOLDEN = _golden()


@pytest.mark.parametrize("subject_id", sorted(GOLDEN))
def test_a_subject_scores_as_recorded(subject_id: str) -> None:
    expected, observed = GOLDEN[subject_id], _observed()[subject_id]
    for name, digest in expected["input"].items():
        assert observed["input"][name] == digest, f"input variable {name}"
    assert observed["some"] == expected["some"]
    assert observed["evaluations"] == expected["evaluations"]
    assert observed["records"] == expected["records"]


def test_the_corpus_is_the_recorded_one() -> None:
    assert sorted(_observed()) == sorted(GOLDEN)


def test_records_and_evaluations_made_without_init_have_every_field() -> None:
    """The reward record and the evaluation are made by setting their fields at once
    (evaluators/model.py, contract/evaluate.py): a field added to either must be set there."""
    versions = corpus.versions()
    records = [r for s in corpus.subjects()[:3] for r in score_subject(s, versions)]
    assert records
    for record in records:
        assert list(record.__dict__) == [f.name for f in fields(RewardRecord)]
    compiled = versions[0].compiled
    evaluation = evaluate_subject(compiled, build_input(corpus.subjects()[6], compiled.document.harness))
    assert list(evaluation.__dict__) == [f.name for f in fields(Evaluation)]


def test_eligibility_is_remembered_only_where_it_reads_just_score_and_split() -> None:
    memos = {v.ref.name: v.compiled.eligible_memo for v in corpus.versions()}
    assert memos["bench"] is not None and memos["broken"] is not None  # score >= 0.6, score > 0.0
    assert memos["loops"] is None and memos["everything"] is None and memos["eligibility"] is None
    bench = corpus.versions()[0]
    scored = [r for s in corpus.subjects() for r in score_subject(s, [bench])]
    again = [r for s in corpus.subjects() for r in score_subject(s, [bench])]  # from the memo
    assert bench.compiled.eligible_memo
    assert [(r.score, r.split, r.eligible) for r in again] == [(r.score, r.split, r.eligible) for r in scored]
