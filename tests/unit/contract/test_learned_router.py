"""No learned router exists: a draft that names one is refused, naming the field; a stored
version that named it still parses (and hashes) as it did."""

from __future__ import annotations

import pytest

from contract.document import ContractInvalid, content_hash, parse_contract, parse_draft
from tests.serving_world import DOCUMENT

LEARNED = DOCUMENT.replace('strategy = "keywords"', 'strategy = "learned"')


def test_a_draft_naming_the_learned_router_is_refused_at_its_line() -> None:
    with pytest.raises(ContractInvalid) as refused:
        parse_draft(LEARNED)
    [problem] = refused.value.problems
    assert problem.path == "harness.router.strategy" and "no learned router" in problem.message
    assert LEARNED.splitlines()[problem.line - 1].startswith("strategy")
    assert parse_draft(DOCUMENT).harness.router.strategy == "keywords"


def test_a_stored_version_naming_it_still_parses_with_its_hash() -> None:
    assert parse_contract(LEARNED).harness.router.strategy == "learned"
    assert content_hash(parse_contract(LEARNED)) != content_hash(parse_contract(DOCUMENT))
