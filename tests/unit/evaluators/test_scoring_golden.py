"""Scoring a fixed, varied corpus gives exactly what it gave when the expected values were
recorded (tests/unit/evaluators/scoring_corpus.py): every input variable, evaluation and
reward record, field by field. Rewrites for speed must not change a byte of any of them."""

from __future__ import annotations

import json
from typing import Any

import pytest

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
