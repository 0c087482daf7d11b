"""A contract may name the learned router (``hcp router train`` makes one); a draft that
does is stored and validated like any other, and the strategy is part of its hash."""

from __future__ import annotations

from contract.document import content_hash, parse_contract
from tests.serving_world import DOCUMENT

LEARNED = DOCUMENT.replace('strategy = "keywords"', 'strategy = "learned"')


def test_a_draft_may_name_the_learned_router_and_it_is_part_of_the_hash() -> None:
    assert parse_contract(LEARNED).harness.router.strategy == "learned"
    assert content_hash(parse_contract(LEARNED)) != content_hash(parse_contract(DOCUMENT))
