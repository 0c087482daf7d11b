"""Factories for trainer tests: contract versions, subjects with rewards, a tiny base model.

Reward records are inserted directly (with the events they judge): the evaluator
workers that normally write them are not what these tests are about.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from contract.tables import contract_versions
from evaluators.tables import reward_records
from events.model import EventMetadata, NewEvent
from events.store import EventStore

CONTRACT_DOC = '[contract]\nname = "{name}"\n'


def seed_contract(engine: Engine, name: str = "default", version: int = 1,
                  document: str | None = None) -> str:
    """A published contract version row; returns its content hash."""
    document = document or CONTRACT_DOC.format(name=name)
    digest = hashlib.sha256(document.encode()).hexdigest()
    now = datetime.now(UTC)
    with engine.begin() as conn:
        conn.execute(contract_versions.insert().values(
            name=name, version=version, parent_version=None, status="published",
            document=document, content_hash=digest, created_by="test", created_at=now,
            updated_at=now, published_at=now, published_by="test", last_event_position=0))
    return digest


def seed_reward(
    engine: Engine, store: EventStore, specialist: str, prompt: str, response: str,
    score: float, split: str = "train", contract: tuple[str, int, str] = ("default", 1, ""),
    adapter_version: str | None = None, components: dict[str, float] | None = None,
    eligible: bool = True, tenant: str | None = None,
) -> dict[str, Any]:
    """A finished turn (user + assistant events) and its reward record."""
    stream = f"s-{uuid.uuid4().hex[:12]}"
    meta = EventMetadata(specialist=specialist, adapter_version=adapter_version, tenant=tenant)
    appended = store.append([
        NewEvent(stream, "turn.user", {"text": prompt}, metadata=meta),
        NewEvent(stream, "turn.assistant", {"text": response}, metadata=meta),
    ])
    events = [a.event for a in appended]
    reward_id = uuid.uuid4()
    with engine.begin() as conn:
        position = int(conn.execute(select(func.coalesce(func.max(reward_records.c.position), 0)))
                       .scalar() or 0) + 1
        conn.execute(reward_records.insert().values(
            position=position, reward_id=reward_id, subject_id=f"turn:{stream}:2",
            subject_kind="turn", stream_id=stream, first_position=events[0].position,
            last_position=events[-1].position, event_ids=[str(e.event_id) for e in events],
            contract_name=contract[0], contract_version=contract[1], contract_hash=contract[2],
            evaluator_version="test", score=score, components=components or {"quality": score},
            gates={}, split=split, specialist=specialist, adapter_version=adapter_version,
            eligible=eligible, error=None, created_at=datetime.now(UTC)))
    return {"reward_id": str(reward_id), "position": position, "stream": stream,
            "event_ids": [str(e.event_id) for e in events]}


GOOD = ("Say hello politely.", "Hello! How can I help you today?")
BAD = ("Say hello politely.", "go away")


def seed_dataset(engine: Engine, store: EventStore, specialist: str, n_train: int = 8,
                 n_held: int = 4, contract: tuple[str, int, str] = ("default", 1, "")) -> list[dict]:
    """Pairs of good (reward 1) and bad (reward 0.1) answers, train and held-out."""
    rows = []
    for i in range(n_train + n_held):
        split = "train" if i < n_train else "held_out"
        prompt, response, score = (*GOOD, 1.0) if i % 2 == 0 else (*BAD, 0.1)
        rows.append(seed_reward(engine, store, specialist, f"{prompt} #{i // 2}", response,
                                score, split, contract))
    return rows


def tiny_base(path: Path) -> Path:
    from trainer.ml.tiny_model import build_tiny_base_model

    return build_tiny_base_model(path, seed=0, hidden_size=32, num_layers=1, num_heads=2,
                                 max_positions=128)


HOUSE_CONTRACT = '''
[contract]
name = "house"
description = "test contract"
schema_version = 1

[harness]
base_model = "tiny"

[harness.router]
default_specialist = "chat"

[harness.specialists.chat]
description = "chat"

[harness.specialists.coding]
description = "code"
adapter_alias = "prod"

[evaluation]
subject = "turn"

[[evaluation.criteria]]
id = "quality"
weight = 1.0
expression = "1.0"

[training.triggers.coding]
min_new_rewards = 3
auto_promote = true
gate_margin = 0.01
regression_tolerance = { quality = 0.05 }

[training.triggers.chat]
schedule = "every 6h"
reward_floor = { threshold = 0.4, window = 20 }
'''
