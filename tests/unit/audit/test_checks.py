"""The audit's pure checks: rows (as dicts) against events, replays, the reward chain."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from audit.ancestry import ancestors
from audit.checks import approvals, contracts, registry, rewards, training
from audit.report import Findings, show
from audit.sql_nodestore import completed_nodes
from audit.tree import CompactRange
from evaluators.chain import GENESIS_HASH, reward_hash, verify_rewards
from evaluators.model import RewardRecord
from events.memory_store import InMemoryEventStore
from events.model import EventMetadata, NewEvent, RecordedEvent

DOC = '[contract]\nname = "c"\n'


def log_of(*entries: tuple[str, str, dict[str, Any], str]) -> list[RecordedEvent]:
    store = InMemoryEventStore()
    return [store.append([NewEvent(stream, kind, payload, metadata=EventMetadata(actor=actor))])[0].event
            for stream, kind, payload, actor in entries]


def contract_log() -> list[RecordedEvent]:
    return log_of(
        ("contract:c", "contract.draft_created", {"name": "c", "version": 1, "parent_version": None,
                                                  "content_hash": "h1", "document": DOC}, "ann"),
        ("contract:c", "contract.draft_edited", {"name": "c", "version": 1, "content_hash": "h2",
                                                 "document": DOC + "# v2\n"}, "ann"),
        ("contract:c", "contract.published", {"name": "c", "version": 1, "content_hash": "h2"}, "bob"))


def contract_row(**changes: Any) -> dict[str, Any]:
    row = {"name": "c", "version": 1, "status": "published", "document": DOC + "# v2\n", "content_hash": "h2",
           "parent_version": None, "created_by": "ann", "published_by": "bob", "last_event_position": 3}
    return {**row, **changes}


def test_a_contract_version_is_replayed_from_its_events() -> None:
    f = Findings("contract_versions", "contract_versions", "events")
    logged = contracts.check_contract_versions(f, [contract_row()], contract_log(), hash_of=lambda d: "h2")
    assert f.ok and f.checked == 1 and logged == {("c", 1): "h2"}


def test_a_changed_document_a_missing_row_and_a_row_without_events_are_named() -> None:
    f = Findings("contract_versions", "contract_versions", "events")
    rows = [contract_row(document=DOC + "# forged\n"), contract_row(version=2)]
    contracts.check_contract_versions(f, rows, contract_log(), hash_of=lambda d: "h2")
    assert [(m.subject, m.message.split(" ")[0]) for m in f.mismatches] == [("c@1", "document"),
                                                                             ("c@2", "no")]
    f = Findings("contract_versions", "contract_versions", "events")
    contracts.check_contract_versions(f, [], contract_log(), hash_of=lambda d: "h2")
    assert [m.subject for m in f.mismatches] == ["c@1"] and "row is missing" in f.mismatches[0].message


def test_a_stored_document_must_still_hash_to_its_content_hash() -> None:
    f = Findings("contract_versions", "contract_versions", "events")
    contracts.check_contract_versions(f, [contract_row()], contract_log(), hash_of=lambda d: "other")
    assert "hashes to other" in f.mismatches[0].message


def test_a_run_is_replayed_through_failure_retry_and_success() -> None:
    run = {"run_id": "r", "parent_adapter_id": None, "base_model": "tiny", "manifest_id": "m",
           "firing_id": "f", "hyper": {"steps": 2}, "reason": "x"}
    events = log_of(
        ("training_run:r", "training.queued", run, "sys"),
        ("training_run:r", "training.started", {"run_id": "r", "attempt": 1}, "w1"),
        ("training_run:r", "training.failed", {"run_id": "r", "attempt": 1, "error": "oom"}, "w1"),
        ("training_run:r", "training.requeued", {"run_id": "r", "reason": "again"}, "ann"),
        ("training_run:r", "training.started", {"run_id": "r", "attempt": 1}, "w2"),
        ("training_run:r", "training.succeeded", {"run_id": "r", "attempt": 1, "adapter_id": "s@1"}, "w2"))
    state = training.replay_run(events)
    fields = (state["status"], state["attempts"], state["adapter_id"], state["error"])
    assert fields == ("succeeded", 1, "s@1", None)
    f = Findings("training_runs", "training_runs", "events")
    training.check_runs(f, [{**state, "run_id": "r", "status": "failed"}], events)
    [mismatch] = f.mismatches
    assert "status is 'failed' in the row but 'succeeded'" in mismatch.message


def test_alias_moves_must_agree_with_the_rows_and_with_each_other() -> None:
    moved_at = datetime(2026, 1, 1, tzinfo=UTC)

    def move(adapter: str, previous: str | None) -> tuple[str, str, dict[str, Any], str]:
        return ("specialist:s", "alias.moved", {"specialist": "s", "alias": "prod", "adapter_id": adapter,
                                               "previous_adapter_id": previous, "reason": "r"}, "ann")

    events = log_of(move("s@1", None), move("s@2", "s@9"))
    rows = [{"position": e.position, "specialist": "s", "alias": "prod",
             "adapter_id": e.payload["adapter_id"], "previous_adapter_id": e.payload["previous_adapter_id"],
             "actor": "ann", "reason": "r", "moved_at": e.recorded_at} for e in events]
    rows[0]["moved_at"] = moved_at
    f = Findings("alias_moves", "alias_moves", "events")
    registry.check_alias_moves(f, rows, events)
    assert [m.subject for m in f.mismatches] == ["alias move at position 1", "alias move at position 2"]
    assert "moved_at" in f.mismatches[0].message and "replaced 's@9'" in f.mismatches[1].message


def test_serving_moves_must_agree_with_the_rows_and_with_each_other() -> None:
    def move(version: int | None, previous: int | None) -> tuple[str, str, dict[str, Any], str]:
        return ("contract:c", "contract.serving_moved", {"name": "c", "specialist": "coding",
                "version": version, "previous_version": previous, "reason": "publish"}, "ann")

    events = log_of(move(1, None), move(3, 2), move(None, 3))
    rows = [{"position": e.position, "name": "c", "specialist": "coding", "version": e.payload["version"],
             "previous_version": e.payload["previous_version"], "actor": "ann", "reason": "publish",
             "moved_at": e.recorded_at} for e in events]
    rows[2]["version"] = 3  # the retirement rewritten as if 3 still served
    f = Findings("contract_serving_moves", "contract_serving_moves", "events")
    contracts.check_serving_moves(f, rows, events)
    assert [m.subject for m in f.mismatches] == ["serving move at position 3", "serving move at position 2"]
    assert "version is 3 in the row but None" in f.mismatches[0].message
    assert "replaced version 2" in f.mismatches[1].message and "served 1" in f.mismatches[1].message


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
    approvals.check_approvals(f, [], [], [], events)
    unapproved = {m.subject: m.message for m in f.mismatches if m.subject.startswith("alias move")}
    assert sorted(unapproved) == ["alias move at position 12", "alias move at position 6",
                                  "alias move at position 9"]
    assert "no alias.move_approved" in unapproved["alias move at position 6"]
    assert "approved their own request" in unapproved["alias move at position 9"]
    assert "asked for s@5" in unapproved["alias move at position 12"]
    # Events with no rows are named too (the rows were passed empty).
    assert any(m.subject == "protection change at position 2" for m in f.mismatches)
