"""The audit's pure checks: the log against itself, the ancestry, the reward chain."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from audit.ancestry import ancestors
from audit.checks import approvals, rewards
from audit.report import Findings, show
from audit.sql_nodestore import completed_nodes
from audit.tree import CompactRange
from evaluators.chain import GENESIS_HASH, reward_hash, verify_rewards
from evaluators.model import RewardRecord
from events.memory_store import InMemoryEventStore
from events.model import EventMetadata, NewEvent, RecordedEvent


def log_of(*entries: tuple[str, str, dict[str, Any], str]) -> list[RecordedEvent]:
    store = InMemoryEventStore()
    return [store.append([NewEvent(stream, kind, payload, metadata=EventMetadata(actor=actor))])[0].event
            for stream, kind, payload, actor in entries]


def test_the_ancestry_is_the_union_of_row_and_event_parents() -> None:
    rows = [{"adapter_id": "s@3", "parent_adapter_id": None},
            {"adapter_id": "s@2", "parent_adapter_id": "s@1"},
            {"adapter_id": "s@1", "parent_adapter_id": "s@3"}]  # a forged cycle must not loop
    registered = {"adapter_id": "s@3", "parent_adapter_id": "s@2"}
    events = log_of(("specialist:s", "adapter.registered", registered, "w"))
    assert ancestors("s@3", rows, events) == {"s@1", "s@2", "s@3"}
    assert ancestors("s@9", rows, events) == set()


def record(position: int, prev_hash: str, score: float = 0.5) -> RewardRecord:
    r = RewardRecord(reward_id=uuid.UUID(int=position), subject_id=f"s{position}", subject_kind="turn",
                     stream_id="s", first_position=1, last_position=2, event_ids=("e",), contract_name="c",
                     contract_version=1, contract_hash="h", evaluator_version="t", score=score,
                     components={}, gates={}, split="train", specialist=None, adapter_version=None,
                     eligible=True, position=position, prev_hash=prev_hash,
                     created_at=datetime(2026, 1, 1, tzinfo=UTC))
    return replace(r, hash=reward_hash(prev_hash, r))


def chain(n: int) -> list[RewardRecord]:
    out, prev = [], GENESIS_HASH
    for position in range(1, n + 1):
        out.append(record(position, prev))
        prev = out[-1].hash or ""
    return out


def test_the_reward_chain_names_the_altered_reward_and_the_gap() -> None:
    rows = chain(5)
    assert verify_rewards(rows) == (5, [])
    rows[2] = replace(rows[2], score=0.0)
    del rows[3]
    checked, breaks = verify_rewards(rows)
    assert checked == 4
    assert [(b.position, b.reward_id) for b in breaks] == [(3, str(uuid.UUID(int=3))), (4, None)]
    # an int score hashes as its float: what the database hands back
    as_int, as_float = record(1, GENESIS_HASH, 1), record(1, GENESIS_HASH, 1.0)
    assert reward_hash(GENESIS_HASH, as_int) == reward_hash(GENESIS_HASH, as_float)


def test_used_rewards_are_checked_with_their_neighbours_and_seals() -> None:
    rows = chain(4)
    at = {r.position or 0: r for r in rows}
    f = Findings("reward_records", "reward_records", "chain")
    rewards.check_used(f, [rows[1]], at, [str(rows[1].reward_id), str(uuid.uuid4())])
    assert len(f.mismatches) == 1 and "no row has it" in f.mismatches[0].message
    rewritten = replace(rows[1], score=0.0)
    rewritten = replace(rewritten, hash=reward_hash(rewritten.prev_hash or "", rewritten))  # and its hash
    f = Findings("reward_records", "reward_records", "chain")
    rewards.check_used(f, [rewritten], {**at, 2: rewritten}, [str(rewritten.reward_id)])
    assert "the reward after it (position 3) was chained to another hash" in f.mismatches[0].message
    seal = log_of(("rewards:seals", "reward.sealed", {"from_position": 0, "to_position": 4,
                                                      "head_hash": "f" * 64}, "sys"))
    f = Findings("reward_records", "reward_records", "chain")
    rewards.check_seals(f, seal, at)
    assert "no longer reaches the head sealed at event position 1" in f.mismatches[0].message


def test_completed_nodes_are_what_the_compact_range_finishes() -> None:
    compact = CompactRange()
    for size in range(1, 40):
        finished = {node for node, _ in compact.append(bytes(32))}
        assert finished == completed_nodes(size - 1, size)
    assert completed_nodes(5, 9) == {(0, 5), (0, 6), (0, 7), (0, 8), (1, 2), (1, 3), (2, 1), (3, 0)}


def test_long_values_are_shown_by_their_digest() -> None:
    assert show("short") == "'short'"
    assert show("x" * 500).startswith("<500 chars, sha256 ")


def test_a_protected_alias_moves_only_right_after_another_actors_approval() -> None:
    def step(event_type: str, actor: str, **payload: Any) -> tuple[str, str, dict[str, Any], str]:
        return ("specialist:s", event_type, {"specialist": "s", "alias": "prod", "reason": "r", **payload},
                actor)

    def moved(actor: str, target: str) -> tuple[str, str, dict[str, Any], str]:
        return step("alias.moved", actor, adapter_id=target, previous_adapter_id=None, kind="move")

    events = log_of(
        moved("ann", "s@1"),  # not protected yet: no approval needed
        step("alias.protection_changed", "ann", protected=True),
        step("alias.move_requested", "ann", request_id="r1", kind="move", adapter_id="s@2",
             expected_current="s@1"),
        step("alias.move_approved", "bob", request_id="r1"), moved("bob", "s@2"),  # as it should be
        moved("cat", "s@3"),  # no approval at all
        step("alias.move_requested", "ann", request_id="r2", kind="move", adapter_id="s@4",
             expected_current="s@3"),
        step("alias.move_approved", "ann", request_id="r2"), moved("ann", "s@4"),  # self-approved
        step("alias.move_requested", "ann", request_id="r3", kind="move", adapter_id="s@5",
             expected_current="s@4"),
        step("alias.move_approved", "bob", request_id="r3"), moved("bob", "s@6"))  # another target
    f = Findings("alias_approvals", "alias_*", "events")
    approvals.check_approvals(f, events)
    unapproved = {m.subject: m.message for m in f.mismatches if m.subject.startswith("alias move")}
    assert sorted(unapproved) == ["alias move at position 12", "alias move at position 6",
                                  "alias move at position 9"]
    assert "no alias.move_approved" in unapproved["alias move at position 6"]
    assert "approved their own request" in unapproved["alias move at position 9"]
    assert "asked for s@5" in unapproved["alias move at position 12"]


def test_a_judged_reward_must_rest_on_the_verdict_the_log_holds() -> None:
    payload = {"model": "sha256:m", "prompt_hash": "p", "seed": 0, "verdict": "7", "max_tokens": 4,
               "served_by": "http"}
    [verdict] = log_of(("judge:acme", "judge.verdict", payload, "system:judge"))
    judgement = {"judge": "q", "model": "sha256:m", "prompt_hash": "p", "seed": 0, "verdict": "7",
                 "verdict_event": str(verdict.event_id), "score": 0.6, "scores": None, "error": None}
    judged = replace(record(1, GENESIS_HASH), judgements=(judgement,))
    events = {str(verdict.event_id): verdict}
    def lookup(ids: set[str]) -> dict[str, RecordedEvent]:
        return {i: events[i] for i in ids if i in events}

    ok = Findings("reward_records", "reward_records", "verdicts")
    rewards.check_judgements(ok, [judged, record(2, "x")], lookup)
    assert ok.ok
    bad = Findings("reward_records", "reward_records", "verdicts")
    altered = replace(judged, judgements=({**judgement, "verdict": "10"},))
    gone = replace(judged, judgements=({**judgement, "verdict_event": str(uuid.uuid4())},))
    rewards.check_judgements(bad, [altered, gone], lookup)
    assert len(bad.mismatches) == 2
    assert "not the one" in str(bad.mismatches[0]) and "not in the log" in str(bad.mismatches[1])
