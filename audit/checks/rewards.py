"""Reward records: their own hash chain, its seals in the log, the contract they name, and
the judges' verdicts they rest on (each one the log's ``judge.verdict``).

The whole chain (``audit all``) is walked like the event chain. An adapter's audit checks
only the rewards its manifests use: each one's own hash, its links to the rewards on
either side, and every ``reward.sealed`` event against the chain (a reward rewritten with
all later hashes recomputed no longer reaches a sealed head).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from audit.report import Findings
from evaluators.chain import GENESIS_HASH, check_own_hash, verify_rewards
from evaluators.model import RewardRecord
from events.model import RecordedEvent


def check_chain(findings: Findings, records: Iterable[RewardRecord]) -> None:
    """Every stored reward, in position order from position 1."""
    checked, breaks = verify_rewards(records)
    findings.checked += checked
    for brk in breaks:
        findings.add(_name(brk.reward_id, brk.position), brk.reason)


def check_used(findings: Findings, used: list[RewardRecord], neighbours: Mapping[int, RewardRecord],
               wanted_ids: Iterable[str]) -> None:
    """The rewards an adapter's manifests name, with the rows on either side of each."""
    found = {str(r.reward_id) for r in used}
    for reward_id in sorted(set(wanted_ids) - found):
        findings.add(f"reward {reward_id}", "a manifest names this reward, but no row has it")
    for record in used:
        findings.checked += 1
        position, name = record.position or 0, _name(str(record.reward_id), record.position)
        problem = check_own_hash(record)
        if problem:
            findings.add(name, problem)
        before = neighbours.get(position - 1)
        expected_prev = GENESIS_HASH if position == 1 else (before.hash if before else None)
        if expected_prev is None:
            findings.add(name, f"reward position {position - 1} is missing (the chain before it)")
        elif record.prev_hash != expected_prev:
            findings.add(name, "prev_hash is not the hash of the reward before it")
        after = neighbours.get(position + 1)
        if after is not None and after.prev_hash != record.hash:
            findings.add(name, f"the reward after it (position {position + 1}) was chained to another hash")


def check_seals(findings: Findings, seals: list[RecordedEvent], at: Mapping[int, RewardRecord]) -> None:
    """Each seal's head: the reward at its position must still have the sealed hash."""
    for seal in seals:
        findings.checked += 1
        to, head = int(seal.payload["to_position"]), seal.payload["head_hash"]
        record = at.get(to)
        if record is None:
            findings.add(f"reward position {to}", f"sealed by the event at position {seal.position}, "
                                                  "but no reward is stored there")
        elif record.hash != head:
            findings.add(_name(str(record.reward_id), to),
                         f"the chain no longer reaches the head sealed at event position {seal.position} "
                         f"(sealed {head[:12]}…, now {str(record.hash)[:12]}…): rewards up to {to} were "
                         "rewritten")


def check_contract_hashes(findings: Findings, records: Iterable[RewardRecord],
                          logged: Mapping[tuple[str, int], str]) -> None:
    """Each reward's contract hash is the one the log gives its contract version."""
    for record in records:
        expected = logged.get((record.contract_name, record.contract_version))
        if expected is not None and record.contract_hash != expected:
            findings.add(_name(str(record.reward_id), record.position),
                         f"names contract hash {record.contract_hash[:12]}… for {record.contract_name}@"
                         f"{record.contract_version}, whose events say {expected[:12]}…")


def check_judgements(findings: Findings, records: Iterable[RewardRecord],
                     events: Callable[[set[str]], Mapping[str, RecordedEvent]]) -> None:
    """Each judged reward's verdicts are the log's: every judgement names a ``judge.verdict``
    event with the same model, prompt hash, seed and raw verdict (``events``: by id)."""
    judged = [r for r in records if r.judgements]
    if not judged:
        return
    found = events({str(j.get("verdict_event")) for r in judged for j in r.judgements})
    for record in judged:
        for j in record.judgements:
            event = found.get(str(j.get("verdict_event")))
            wanted = {"model": j.get("model"), "prompt_hash": j.get("prompt_hash"), "seed": j.get("seed"),
                      "verdict": j.get("verdict")}
            if event is None or event.type != "judge.verdict":
                findings.add(_name(str(record.reward_id), record.position),
                             f"judge {j.get('judge')}: its verdict event {j.get('verdict_event')} "
                             "is not in the log")
            elif any(event.payload.get(k) != v for k, v in wanted.items()):
                findings.add(_name(str(record.reward_id), record.position),
                             f"judge {j.get('judge')}: the verdict it records is not the one "
                             f"event {j.get('verdict_event')} holds")


def _name(reward_id: str | None, position: int | None) -> str:
    return f"reward {reward_id} (position {position})" if reward_id else f"reward position {position}"
