"""The harness configuration of one specialist, and its ETag. Pure."""

from __future__ import annotations

import pytest

from contract.document import content_hash, parse_contract
from contract.harness_config import config_hash, etag_matches, harness_config
from kernel.errors import Invalid
from tests.unit.contract.factories import EXAMPLE

DOC = parse_contract(EXAMPLE.read_text().replace(
    'system = "sha256:ec630e75f4ea7d2b3333631648d42067f98b770bf53acace1f1bf002b83c3b27"',
    'system = { text = "Be brief." }'))


def test_the_slot_is_resolved_with_its_tools_prompts_and_skills():
    body = harness_config(DOC, 3, content_hash(DOC), "coding")
    assert body["contract"] == {"name": "default", "version": 3, "content_hash": content_hash(DOC)}
    assert body["tools"] == ["files.read", "files.write", "python.run"]  # the slot's own list
    assert harness_config(DOC, 3, "h", "agent")["tools"] == sorted(DOC.harness.tool_allowlist)
    assert body["adapter_alias"] == "production" and body["router"]["default_specialist"] == "chat"
    assert body["prompts"]["system"]["text"] == "Be brief."
    assert body["prompts"]["router"]["text"] is None  # only a digest was published
    assert [h["name"] for h in body["hooks"]] == ["redact-secrets", "audit-log"]
    with pytest.raises(Invalid, match="does not declare specialist 'nobody'"):
        harness_config(DOC, 3, "h", "nobody")


def test_the_hash_follows_the_content_and_if_none_match_forms_are_understood():
    body = harness_config(DOC, 3, "h", "coding")
    etag = config_hash(body)
    assert etag == config_hash(dict(reversed(body.items())))
    assert etag != config_hash({**body, "tools": []})
    assert etag_matches(f'"{etag}"', etag) and etag_matches(f'W/"{etag}", "x"', etag)
    assert etag_matches("*", etag) and not etag_matches('"other"', etag) and not etag_matches(None, etag)
