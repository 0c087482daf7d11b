"""The reward chain: rows chained as the store writes them, sealed into the log, and the
rows stored before migration 0006 chained by it (append-only triggers back afterwards)."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest
from alembic import command
from sqlalchemy import select, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DatabaseError

from evaluators.chain import GENESIS_HASH, SEAL_TYPE, verify_rewards
from evaluators.model import RewardRecord
from evaluators.rewards import RewardQuery, RewardStore
from evaluators.seal import RewardSeals
from evaluators.tables import reward_records
from events.sql_store import SqlEventStore
from hcp import migrate
from kernel.db import make_engine


def reward(subject: str, score: float | int = 0.5) -> RewardRecord:
    return RewardRecord(
        reward_id=uuid.uuid4(), subject_id=subject, subject_kind="turn", stream_id="s-1",
        first_position=1, last_position=2, event_ids=("e1", "e2"), contract_name="default",
        contract_version=1, contract_hash="c" * 64, evaluator_version="test", score=score,
        components={"quality": 1, "style": 0.25}, gates={"safe": True}, split="train",
        specialist="coding", adapter_version=None, eligible=True)


def seed_contract_row(engine: Engine) -> None:
    now = datetime.now(UTC)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO contract_versions (name, version, status, document, content_hash, "
                          "created_by, created_at, updated_at, last_event_position) VALUES "
                          "('default', 1, 'published', 'x', :h, 't', :now, :now, 0)"),
                     {"h": "c" * 64, "now": now})


def all_rewards(rewards: RewardStore) -> list[RewardRecord]:
    return rewards.find(RewardQuery(limit=10_000))


def test_rewards_are_chained_as_they_are_stored(engine: Engine) -> None:
    seed_contract_row(engine)
    rewards = RewardStore(engine)
    first = rewards.record([reward("a", 1), reward("b")])
    rewards.record([reward("a"), reward("c", 0.75)])  # "a" again: skipped, no gap, no break
    stored = all_rewards(rewards)
    assert [r.position for r in stored] == [1, 2, 3] and stored[0].prev_hash == GENESIS_HASH
    assert [r.hash for r in first] == [r.hash for r in stored[:2]]  # as returned = as read back
    assert verify_rewards(stored) == (3, [])
    assert rewards.chain_head() == (3, stored[-1].hash)
    assert stored[0].to_json()["hash"] == stored[0].hash  # consumers of hcp.rewards can re-check


def varied_rewards() -> list[RewardRecord]:
    """Records of every shape the store writes: errors, no score, int scores, tiny floats
    (hashed by json), tenants, text that COPY and array literals must escape."""
    error = ({"item": "feedback", "message": "no 'rating' ü", "kind": "runtime"},)
    awkward = ['q"uote', "back\\slash", "tab\tline\n", "{brace,comma}", "NULL", "ünï ✓"]
    records = []
    for i, word in enumerate(awkward * 2):
        base = reward(f"turn:{word}:{i}", score=(0.5, 1, 1e-6, 0.0)[i % 4])
        records.append(replace(
            base, tenant=(None, "acme", word)[i % 3], specialist=word if i % 2 else None,
            components={"quality": i / 7, word: 1e-5 if i % 5 == 0 else 1},
            gates={} if i % 4 == 0 else {"safe": i % 3 == 0}, event_ids=(f"e{i}", word),
            created_at=datetime(2026, 3, 1, 10, 0, i, i * 1000 % 2, tzinfo=timezone(timedelta(hours=i % 3))),
            **({"errors": error, "score": None, "eligible": False} if i % 6 == 5 else {})))
    return records


def test_varied_rewards_are_stored_as_given_and_chained(engine: Engine) -> None:
    seed_contract_row(engine)
    rewards, records = RewardStore(engine), varied_rewards()
    written = rewards.record(records)
    assert rewards.record(records) == []  # every key found again, awkward ids too
    stored = all_rewards(rewards)
    assert [r.to_json() for r in stored] == [r.to_json() for r in written]
    assert [(r.subject_id, r.errors, r.tenant) for r in stored] == [
        (r.subject_id, tuple(r.errors), r.tenant) for r in records]
    assert verify_rewards(stored) == (len(records), [])
    rr = reward_records.c
    with engine.connect() as conn:  # the JSON columns hold the driver's json.dumps text
        texts = conn.execute(select(rr.event_ids, rr.components, rr.gates, rr.error)
                             .order_by(rr.position)).all()
    for record, row in zip(records, texts, strict=True):
        assert tuple(row[:3]) == (list(record.event_ids), dict(record.components), dict(record.gates))
        errors = [dict(e) for e in record.errors]
        assert row[3] == (json.dumps(errors, sort_keys=True) if errors else None)
    if engine.dialect.name == "postgresql":  # json, not jsonb: the text as written
        with engine.connect() as conn:
            stored_text = conn.execute(text("SELECT event_ids::text, components::text, gates::text "
                                            "FROM reward_records ORDER BY position")).all()
        assert [tuple(t) for t in stored_text] == [
            (json.dumps(list(r.event_ids)), json.dumps(dict(r.components)), json.dumps(dict(r.gates)))
            for r in records]


def test_seals_carry_the_chain_head_into_the_log(engine: Engine) -> None:
    seed_contract_row(engine)
    rewards, store = RewardStore(engine), SqlEventStore(engine)
    seals = RewardSeals(rewards, store)
    assert seals.seal() is None  # nothing to seal yet
    rewards.record([reward("a"), reward("b")])
    first = seals.seal()
    assert first is not None and first.type == SEAL_TYPE
    assert first.payload == {"from_position": 0, "to_position": 2, "head_hash": rewards.chain_head()[1]}
    assert seals.seal() is None
    rewards.record([reward("c")])
    second = seals.seal()
    assert second is not None and second.payload["from_position"] == 2 and second.stream_seq == 2


def test_the_migration_chains_rewards_stored_before_it(database_url: str) -> None:
    config = migrate.alembic_config(database_url)
    command.downgrade(config, "0005")  # to the revision before 0006
    engine = make_engine(database_url)
    seed_contract_row(engine)
    now = datetime.now(UTC)
    with engine.begin() as conn:
        for position in (1, 2, 3):
            conn.execute(text(
                "INSERT INTO reward_records (position, reward_id, subject_id, subject_kind, stream_id, "
                "first_position, last_position, event_ids, contract_name, contract_version, contract_hash, "
                "evaluator_version, score, components, gates, split, specialist, eligible, created_at) "
                "VALUES (:p, :id, :s, 'turn', 's', 1, 2, '[\"e1\"]', 'default', 1, :h, 'old', :score, "
                "'{\"q\": 1}', '{}', 'train', 'coding', :yes, :now)"),
                {"p": position, "id": uuid.uuid4().hex if engine.dialect.name == "sqlite" else uuid.uuid4(),
                 "s": f"subject-{position}", "h": "c" * 64, "score": position / 4, "yes": True, "now": now})
    engine.dispose()
    migrate.upgrade(database_url)

    engine = make_engine(database_url)
    rewards = RewardStore(engine)
    rewards.record([reward("new")])
    stored = all_rewards(rewards)
    assert [r.position for r in stored] == [1, 2, 3, 4]
    assert verify_rewards(stored) == (4, [])
    with pytest.raises(DatabaseError, match="append-only"), engine.begin() as conn:
        conn.execute(text("UPDATE reward_records SET score = 0 WHERE position = 1"))
    engine.dispose()
