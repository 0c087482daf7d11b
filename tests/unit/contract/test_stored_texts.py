"""Prompts and skills stored as text with the contract, addressed by their digest."""

from __future__ import annotations

import pytest

from contract.diff import diff_contracts
from contract.document import ContractInvalid, content_hash, dump_toml, parse_contract
from contract.sections import StoredText, text_digest
from tests.unit.contract.factories import EXAMPLE

BASE = EXAMPLE.read_text()
BEFORE_SESSIONS = (EXAMPLE.parents[2] / "tests" / "data"
                   / "default-contract-before-sessions.toml").read_text()
SYSTEM = 'system = "sha256:ec630e75f4ea7d2b3333631648d42067f98b770bf53acace1f1bf002b83c3b27"'
REVIEW = 'code-review = "sha256:15c34e00ed660cd1e09a1c97f730e88fea13accdb4ef1d78d2e04858390ba4e2"'


def with_prompt(text: str, digest: str | None = None) -> str:
    pinned = f', digest = "{digest}"' if digest else ""
    return BASE.replace(SYSTEM, f'system = {{ text = """{text}"""{pinned} }}')


def test_a_text_is_stored_with_its_computed_digest_and_survives_a_round_trip():
    doc = parse_contract(with_prompt("You are helpful.\nBe brief.\n"))
    stored = doc.harness.prompts["system"]
    assert isinstance(stored, StoredText) and stored.text == "You are helpful.\nBe brief.\n"
    assert stored.digest == text_digest(stored.text)
    assert content_hash(parse_contract(dump_toml(doc))) == content_hash(doc)


def test_a_pinned_digest_must_match_the_text():
    right = text_digest("Hi")
    assert parse_contract(with_prompt("Hi", right)).harness.prompts["system"].digest == right
    with pytest.raises(ContractInvalid, match="does not match the text"):
        parse_contract(with_prompt("Hi", "sha256:" + "0" * 64))


def test_documents_with_digests_only_keep_their_content_hash():
    # The example's hash as published before texts could be stored (when it still named
    # the learned router, and before sessions could end by themselves).
    expected = "6f86dec5b649c08f9fdb3f091882b3d4063d53abb94ede6c0e627a3f3a6435f1"
    published = BEFORE_SESSIONS.replace('strategy = "keywords"', 'strategy = "learned"')
    assert content_hash(parse_contract(published)) == expected


def test_the_diff_shows_what_changed_in_a_text():
    old = parse_contract(with_prompt("You are helpful.\nBe brief.\n"))
    new = parse_contract(with_prompt("You are helpful.\nBe thorough.\n"))
    result = diff_contracts(old, new)
    [change] = result.changes
    assert (change.item, change.kind, change.path) == ("prompt", "text_changed", "harness.prompts.system")
    assert "-Be brief." in change.note and "+Be thorough." in change.note
    assert "-Be brief." in result.render() and "~ prompt system text" in result.render()


def test_attaching_the_text_of_an_unchanged_digest_says_so():
    text = "Review for correctness, then style."
    digest_only = BASE.replace(REVIEW, f'code-review = "{text_digest(text)}"')
    stored = BASE.replace(REVIEW, f'code-review = {{ text = "{text}" }}')
    [change] = diff_contracts(parse_contract(digest_only), parse_contract(stored)).changes
    assert change.item == "skill" and change.note == "the same content, now stored as text"
