"""A subject's time budget under one contract version is split across its expressions."""

from __future__ import annotations

import pytest

from contract.document import parse_contract
from contract.rubric import DEFAULT_LIMITS
from evaluators.active import subject_limits
from tests.unit.contract.factories import minimal


def test_the_subject_budget_is_split_across_every_expression() -> None:
    doc = parse_contract(minimal())  # two criteria, no gates, eligibility, no applies_to.when
    assert subject_limits(doc, None) == DEFAULT_LIMITS
    assert subject_limits(doc, 0.9).deadline_s == pytest.approx(0.3)
    assert subject_limits(doc, 30.0).deadline_s == DEFAULT_LIMITS.deadline_s  # never above it
    assert subject_limits(doc, 0.9).fuel == DEFAULT_LIMITS.fuel  # fuel stays deterministic
