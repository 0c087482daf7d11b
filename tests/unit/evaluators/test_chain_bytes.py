"""The reward chain's canonical bytes: orjson where it writes what json writes, json
otherwise; either way the hash is sha256(prev_hash + canonical_json(content))."""

from __future__ import annotations

import hashlib
import math
import random
import struct
from dataclasses import replace

import pytest

from evaluators.chain import canonical_bytes, chained_content, reward_hash
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
    content = chained_content(reward, 3)
    assert canonical_bytes(content, reward) == canonical_json(content).encode()
    small = replace(reward, score=1e-5)
    small_content = chained_content(small, 3)
    assert b"1e-05" in canonical_bytes(small_content, small)  # json's spelling, not 0.00001
