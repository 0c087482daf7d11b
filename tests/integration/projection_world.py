"""A world that writes a row into every projected table, through the services only.

On top of the audit world (a published contract, rewards, a base model, two trained
versions, alias moves, a promotion, a signed checkpoint): keys (one revoked, one signed
out of the console), a second contract version edited as a draft, a specialist created
through the API's path, a trigger policy set and dropped, a protected alias with a move
requested, approved and another rejected, a rollback, and a webhook subscription.
"""

from __future__ import annotations

from pathlib import Path

from contract.policy import TriggerPolicy
from hcp.bootstrap import Container
from tests.integration.audit_world import CONTRACT, build_world


def build_projection_world(c: Container, tmp_path: Path) -> dict[str, str]:
    """Build it; the API keys it made, by label."""
    keys = {label: c.keys.create(scopes, label=label, actor="cli:ann")
            for label, scopes in (("auditor", ["audit:read"]), ("root", ["admin"]),
                                  ("gone", ["events:read"]), ("console", ["audit:read"]))}
    c.keys.revoke(keys["gone"].split("_")[1], "cli:ann", "rotated")
    c.keys.end_console_sessions(keys["console"].split("_")[1], "cli:ann")
    build_world(c, tmp_path)
    draft = c.contracts.draft_from("default", 1, "cli:ann")
    c.contracts.edit_draft("default", draft.version, CONTRACT + "\n# a second thought\n", "cli:ann")
    c.registry.create_specialist("translate", "Turning one language into another", "cli:ann")
    c.policies.configure("coding", TriggerPolicy(min_new_rewards=50), "cli:ann")
    c.policies.configure("translate", TriggerPolicy(min_new_rewards=10), "cli:ann")
    c.policies.clear("translate", "cli:ann", "the contract's is enough")
    c.approvals.protect("coding", "staging", True, "cli:ann", "two people move staging")
    asked = c.approvals.request("coding", "staging", "coding@1", "cli:ann", "try the first")
    c.approvals.approve(asked.request_id, "cli:bob", "looked at it")
    refused = c.approvals.request("coding", "staging", "coding@2", "cli:ann", "and the second")
    c.approvals.reject(refused.request_id, "cli:bob", "not yet")
    c.aliases.move("coding", "canary", "coding@1", "cli:ann", "canary the first")
    c.aliases.move("coding", "canary", "coding@2", "cli:ann", "then the second")
    c.aliases.rollback("coding", "canary", "cli:ann", "the second misbehaves")
    c.integrations.subscriptions.subscribe("https://93.184.215.14/hcp", ["alias.moved"],
                                           "s" * 32, None, "cli:ann", "promotions")
    c.checkpoint_signer.sign()
    return keys
