"""A small world for the audit tests: a published contract, chained rewards, a base model,
two adapter versions (the second a successor of the first), alias moves, a status change,
and a signed checkpoint over all of it. Built only through the services, so every row has
the event that created it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from audit.keys import SigningKey
from evaluators.model import RewardRecord
from events.model import EventMetadata, NewEvent
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.unit.trainer_core.fixtures import RecordingDispatcher, fake_model_dir, fake_train

KEY = SigningKey.generate("hcp.test/events")
CONTRACT = (Path(__file__).resolve().parents[2] / "examples" / "contracts" / "default.toml").read_text()


@dataclass
class World:
    c: Container
    contract_hash: str
    rewards: list[RewardRecord]  # every reward, in position order
    key_file: Path


def audited_container(url: str, data_dir: Path, key_file: Path | None) -> Container:
    settings = Settings(database_url=url, data_dir=data_dir, redis_url="", kafka_bootstrap="",
                        checkpoint_key_file=key_file)
    return Container(settings=settings, engine=make_engine(url), dispatch_to=RecordingDispatcher())


def record_rewards(c: Container, contract_hash: str, count: int, tag: str) -> list[RewardRecord]:
    made = []
    for i in range(count):
        stream = f"s-{tag}-{i}-{uuid.uuid4().hex[:6]}"
        meta = EventMetadata(specialist="coding", adapter_version=None)
        events = [a.event for a in c.store.append([
            NewEvent(stream, "turn.user", {"text": f"question {tag} {i}"}, metadata=meta),
            NewEvent(stream, "turn.assistant", {"text": f"answer {tag} {i}"}, metadata=meta)])]
        made.append(RewardRecord(
            reward_id=uuid.uuid4(), subject_id=f"turn:{stream}:2", subject_kind="turn", stream_id=stream,
            first_position=events[0].position, last_position=events[-1].position,
            event_ids=tuple(str(e.event_id) for e in events), contract_name="default", contract_version=1,
            contract_hash=contract_hash, evaluator_version="test", score=1.0 if i % 2 else 0.25,
            components={"quality": 0.5}, gates={}, split="held_out" if i % 4 == 3 else "train",
            specialist="coding", adapter_version=None, eligible=True))
    return c.rewards.record(made)


def build_world(c: Container, tmp_path: Path) -> list[RewardRecord]:
    draft = c.contracts.create_draft("default", CONTRACT, "tester")
    c.contracts.publish("default", draft.version, "tester")
    digest = c.contracts.get("default", 1).content_hash
    rewards = record_rewards(c, digest, 8, "a")
    c.registry.register_base_model("tiny", fake_model_dir(tmp_path / "models" / "base"), "tester")
    first = fake_train(c, c.triggers.fire_manual("coding", "tester", "first", parent="root").run_id)
    c.aliases.move("coding", "production", first.adapter_id, "tester", "first version")
    rewards += record_rewards(c, digest, 8, "b")
    fired = c.triggers.fire_manual("coding", "tester", "second", parent=first.adapter_id)
    second = fake_train(c, fired.run_id)
    c.registry.set_status(second.adapter_id, "promoted", "tester", "better", alias="production")
    c.checkpoint_signer.sign()
    return rewards


@pytest.fixture
def world(database_url: str, tmp_path: Path) -> Iterator[World]:
    key_file = tmp_path / "checkpoint.key"
    key_file.write_text(KEY.skey() + "\n")
    c = audited_container(database_url, tmp_path, key_file)
    rewards = build_world(c, tmp_path)
    yield World(c, c.contracts.get("default", 1).content_hash, rewards, key_file)
    c.close()
