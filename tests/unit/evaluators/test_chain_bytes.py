"""The reward chain's canonical bytes: orjson where it writes what json writes, json
otherwise, the position filled into bytes made ahead (``link_template``); either way the
hash is sha256(prev_hash + canonical_json(content))."""

from __future__ import annotations

import hashlib
import math
import random
import struct
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest

from evaluators.chain import GENESIS_HASH, chained, chained_content, link_template, reward_hash
from evaluators.model import RewardRecord
from evaluators.scoring import score_subject
from kernel.canonical import canonical_json
from tests.unit.evaluators.test_scoring import contract_text, first_turn, version


def a_reward() -> RewardRecord:
    _, [subject] = first_turn()
    [reward] = score_subject(subject, [version(contract_text())])
    return reward


def expected_hash(prev: str, record: RewardRecord, position: int) -> str:
    return hashlib.sha256((prev + canonical_json(chained_content(record, position))).encode()).hexdigest()


def random_float(draw: random.Random) -> float:
    if draw.random() < 0.5:  # any bit pattern: tiny, huge, subnormal, NaN, infinite
        return float(struct.unpack("d", struct.pack("Q", draw.getrandbits(64)))[0])
    return draw.random() * 10.0 ** draw.randint(-9, 20) * draw.choice((1, -1))


def test_random_scores_and_components_hash_as_canonical_json_says() -> None:
    reward, draw = a_reward(), random.Random(13)
    for _ in range(3000):
        record = replace(reward, score=random_float(draw),
                         components={"a": random_float(draw), "b": draw.choice((0.0, 1, 0.5, 1e-5))})
        assert reward_hash("p" * 64, record, 7) == expected_hash("p" * 64, record, 7)


@pytest.mark.parametrize("change", [
    {"score": 1e-05}, {"score": 9.999999999999999e-05}, {"score": 0.0001}, {"score": -0.0},
    {"score": math.nan}, {"score": math.inf}, {"score": 1e16}, {"score": 1}, {"score": None},
    {"components": {"b": 1.5e-7, "a": 2 / 3}}, {"components": {"x": 2**70}},
    {"gates": {"g": True, "h": False}}, {"specialist": "spé\"cial\n\t\x00\x7f\u2028漢 🦀"},
    {"subject_id": "turn:ü:1", "stream_id": "\\back\\slash"},
    {"errors": ({"item": "g", "message": "ü", "kind": "type"},), "score": None},
    {"event_ids": ("a", "b")}, {"tenant": "acme"}, {"contract_version": 2**40},
])
def test_edge_values_hash_as_canonical_json_says(change: dict) -> None:
    record = replace(a_reward(), **change)
    assert reward_hash("p" * 64, record, 9) == expected_hash("p" * 64, record, 9)


def test_orjson_is_used_for_plain_records_and_json_for_the_rest() -> None:
    reward = a_reward()
    template = link_template(reward)
    assert template is not None
    assert template.canonical(3) == canonical_json(chained_content(reward, 3)).encode()
    for change in ({"score": 1e-5}, {"components": {"a": math.nan}}, {"gates": {"g": 1}},
                   {"event_ids": (uuid.uuid4(),)}, {"components": {"x": 2**70}},
                   {"errors": ({"item": "g", "message": "m", "kind": "type"},), "score": None}):
        assert link_template(replace(reward, **change)) is None, change


@pytest.mark.parametrize("change", [
    {"components": {"position": 0, "reward_id": 1.0, "gates": 0.5}},  # keys that read like the cut
    {"gates": {"position": True}}, {"subject_id": ',"position":0,"reward_id":'},
    {"tenant": '"position":0,"reward_id":"x"'},
    {"created_at": datetime(2024, 6, 1, 12, 0, tzinfo=UTC)},  # a whole second: .000000
    {"created_at": datetime(2024, 6, 1, 12, 0, 0, 5, tzinfo=timezone(timedelta(hours=2)))},
    {"created_at": datetime(9, 1, 2, 3, 4, 5, 600, tzinfo=UTC)},
    {"reward_id": "not-a-uuid-object"}, {"event_ids": ["a", "b"]}, {"event_ids": ()},
    {"score": 1}, {"score": 0}, {"score": None}, {"specialist": None, "adapter_version": None},
    {"contract_version": 2**62}, {"first_position": 2**63 - 1},
])
def test_templates_fill_in_to_the_canonical_bytes(change: dict) -> None:
    record = replace(a_reward(), **change)
    template = link_template(record)
    assert template is not None
    for position in (1, 9, 10**12):
        assert template.canonical(position) == canonical_json(chained_content(record, position)).encode()
        assert template.hash("p" * 64, position) == expected_hash("p" * 64, record, position)


def test_a_chain_of_random_records_links_as_the_definition_says() -> None:
    base, draw, start = a_reward(), random.Random(7), datetime(2024, 1, 1, tzinfo=UTC)
    prev = GENESIS_HASH
    for position in range(1, 400):
        record = replace(base, score=draw.choice((None, draw.random(), 1, 1e-6)),
                         components={draw.choice("abcxyz"): draw.random() for _ in range(draw.randint(0, 4))},
                         created_at=start + timedelta(microseconds=draw.randint(0, 10**9)),
                         tenant=draw.choice((None, "acme", "ü")), reward_id=uuid.uuid4())
        placed = chained(record, position, prev, link_template(record))
        assert placed.hash == expected_hash(prev, record, position) == chained(record, position, prev).hash
        assert (placed.position, placed.prev_hash) == (position, prev)
        prev = placed.hash or ""
