"""What publishing a contract version will set going, said before it is published (`hcp
contract publish` prints it and, on a terminal, asks): what it scores, what the chat
endpoint serves under it, and which trigger policies come into force (training can start
on the rewards re-scoring history makes, within the trigger loop's next rounds)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contract.document import ContractDocument
    from contract.versions import ContractVersion
    from hcp.bootstrap import Container
    from trainer.triggers.policy import Policy


def publish_notice(c: Container, name: str, version: int) -> list[str]:
    draft = c.contracts.get(name, version)
    if draft.status != "draft":
        return []  # the publisher refuses it, saying why
    doc = draft.parsed()
    return [f"publishing {draft.ref}:",
            f"  scoring: every finished subject from now on, and history re-scored under {draft.ref}",
            *_serving(c, draft, doc), *_training(c, draft)]


def _serving(c: Container, draft: ContractVersion, doc: ContractDocument) -> list[str]:
    served = c.serving.current(draft.name)
    starts = sorted(set(doc.harness.specialists) - set(served))
    used = c.settings.serving_contract
    if not starts:
        kept = ", ".join(f"{s} ({m.ref})" for s, m in sorted(served.items())) or "none"
        return [f"  serving: unchanged: {kept}; `hcp contract serve {draft.name} {draft.version} "
                "--reason …` moves them"]
    lines = [f"  serving: {draft.ref} becomes the serving version of {', '.join(starts)} "
             f"(no version of {draft.name} serves them yet)"]
    if used != draft.name:
        return [*lines, f"    this server's chat endpoint serves under {used} (HCP_SERVING_CONTRACT): "
                        "unchanged"]
    lines.append(f"    /v1/chat/completions (HCP_SERVING_CONTRACT={used}) answers them under it "
                 "from the next request:")
    for specialist in starts:
        slot = doc.harness.specialists[specialist]
        move = c.aliases.at(specialist, slot.adapter_alias) if _known(c, specialist) else None
        who = (move.adapter_id if move and move.adapter_id
               else f"nothing yet, so the base model {doc.harness.base_model}")
        lines.append(f"      {specialist} from alias {slot.adapter_alias}: {who}")
    return lines


def _training(c: Container, draft: ContractVersion) -> list[str]:
    mine = f"contract:{draft.ref}"
    lines = []
    for specialist in sorted(s.name for s in c.registry.specialists()):
        before = c.policies.effective(specialist)
        after = c.policies.effective_if_published(specialist, draft)
        if after.source != mine:
            continue
        was = f"replacing {before.source.removeprefix('contract:')}'s" if before.source != "none" \
            else "none before"
        lines.append(f"    {specialist}: {_rule(after)} ({was})")
    if not lines:
        return ["  training: no trigger policy of it comes into force (policies set through the "
                "API, or another contract's, stay)"]
    return ["  training: its trigger policies come into force; a trigger loop (embedded `hcp "
            "serve`, or `hcp triggers run`) starts a run as each comes due on the rewards "
            "re-scoring history gives it:", *lines]


def _rule(policy: Policy) -> str:
    rule = policy.rule
    if not rule.enabled:
        return "disabled"
    parts = [f"after {rule.min_new_rewards} new eligible rewards" if rule.min_new_rewards else "",
             f"when the mean falls below {rule.reward_floor.threshold}" if rule.reward_floor else "",
             f"on schedule '{rule.schedule}'" if rule.schedule else ""]
    said = ", or ".join(p for p in parts if p) or "by hand only"
    promoted = (f"{policy.gate.alias} moves to a successor that passes its gate" if rule.auto_promote
                else "a successor is promoted by hand")
    return f"a run {said}; {promoted}"


def _known(c: Container, specialist: str) -> bool:
    return any(s.name == specialist for s in c.registry.specialists())
