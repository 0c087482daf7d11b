"""What a harness runs for one specialist: the serving version's ``[harness]``, resolved.

Pure. The body names the contract version and its content hash, and carries the
slot's settings with the tools it may call (its own list, else the harness-wide one),
the router, hooks, and every prompt and skill with its text where the contract stores
it. ``config_hash`` is the sha256 of the body's canonical JSON: the ETag a polling
harness sends back, so an unchanged configuration costs a 304 and no body.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from contract.sections import ContractDocument, StoredText
from kernel.errors import Invalid


def harness_config(doc: ContractDocument, version: int, content_hash: str,
                   specialist: str) -> dict[str, Any]:
    """The configuration of ``specialist`` under ``doc`` (``name@version``)."""
    harness = doc.harness
    slot = harness.specialists.get(specialist)
    if slot is None:
        raise Invalid(f"{doc.name}@{version} does not declare specialist '{specialist}'")
    tools = sorted(slot.tools) if slot.tools is not None else list(harness.tool_allowlist)
    return {
        "contract": {"name": doc.name, "version": version, "content_hash": content_hash},
        "specialist": specialist,
        "base_model": harness.base_model,
        "base_model_digest": harness.base_model_digest,
        "adapter_alias": slot.adapter_alias,
        "slot": slot.model_dump(mode="json", exclude={"adapter_alias", "tools"}),
        "router": harness.router.model_dump(mode="json"),
        "tools": tools,
        "hooks": [hook.model_dump(mode="json") for hook in harness.hooks],
        "prompts": {name: _text(value) for name, value in sorted(harness.prompts.items())},
        "skills": {name: _text(value) for name, value in sorted(harness.skills.items())},
    }


def _text(value: StoredText | str) -> dict[str, str | None]:
    if isinstance(value, StoredText):
        return {"digest": value.digest, "text": value.text}
    return {"digest": value, "text": None}  # only the digest was published


def config_hash(body: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of a configuration body."""
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """Whether an ``If-None-Match`` header names ``etag`` (weak or strong, or ``*``)."""
    if not if_none_match:
        return False
    tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in tags or f'"{etag}"' in tags or etag in tags
