"""Reward statistics in SQL (evaluators/stats.py) on SQLite and PostgreSQL: histograms,
means, criterion values, filters, the newest-N cap and paging."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from evaluators.stats import RewardFilter, RewardStats, histogram
from events.sql_store import SqlEventStore
from tests.unit.trainer_core.factories import seed_contract, seed_reward

SCORES = [0.0, 0.05, 0.15, 0.5, 0.55, 0.95, 1.0]


@pytest.fixture
def seeded(engine):
    store = SqlEventStore(engine)
    one, two = seed_contract(engine, version=1), seed_contract(engine, version=2)
    rows = [seed_reward(engine, store, "coding", "p", "r", s, "train" if i % 2 else "held_out",
                        ("default", 1, one), "coding@1", {"brevity": 1 - s, "helpfulness": s})
            for i, s in enumerate(SCORES)]
    rows += [seed_reward(engine, store, "chat", "p", "r", 0.25, "train", ("default", 2, two), "chat@1",
                         {"brevity": 0.5})]
    return RewardStats(engine), rows


def test_histogram_and_means_over_a_filter(seeded):
    stats, _ = seeded
    coding = stats.distribution(RewardFilter(specialist="coding"), ["brevity", "helpfulness"])
    assert coding.histogram == (2, 1, 0, 0, 0, 2, 0, 0, 0, 2) and coding.count == 7
    assert coding.mean == pytest.approx(sum(SCORES) / 7)
    assert coding.criteria_means["brevity"] == pytest.approx(1 - sum(SCORES) / 7)
    assert not coding.capped
    by_version = stats.distribution(RewardFilter(contract_name="default", contract_version=2))
    assert by_version.count == 1 and by_version.histogram[2] == 1
    assert stats.distribution(RewardFilter(adapter_version="nobody@1")).mean is None


def test_a_criterion_replaces_the_score_and_the_sample_takes_the_newest(seeded):
    stats, _ = seeded
    brevity = stats.distribution(RewardFilter(specialist="coding", criterion="brevity"))
    assert brevity.histogram == histogram([1 - s for s in SCORES])
    newest = stats.distribution(RewardFilter(specialist="coding"), sample=2)
    assert newest.count == 2 and newest.capped and newest.mean == pytest.approx((0.95 + 1.0) / 2)


def test_time_filters_and_newest_first_paging(seeded):
    stats, rows = seeded
    now = datetime.now(UTC)
    assert stats.distribution(RewardFilter(since=now + timedelta(hours=1))).count == 0
    assert stats.distribution(RewardFilter(until=now + timedelta(hours=1))).count == 8
    first = stats.latest(RewardFilter(specialist="coding"), limit=3)
    assert [r.position for r in first] == [rows[6]["position"], rows[5]["position"], rows[4]["position"]]
    older = stats.latest(RewardFilter(specialist="coding"), before=first[-1].position, limit=10)
    assert [r.position for r in older] == [r["position"] for r in rows[3::-1]]


def test_histograms_of_a_set_of_rewards_per_split(seeded):
    stats, rows = seeded
    found = stats.of_positions([r["position"] for r in rows[:7]] + [10_000])
    assert sum(found.histograms["train"]) == 3 and sum(found.histograms["held_out"]) == 4
    assert found.histograms["held_out"] == (1, 1, 0, 0, 0, 1, 0, 0, 0, 1)
    assert found.scored == 7 and found.means["train"] == pytest.approx((0.05 + 0.5 + 0.95) / 3)
    from sqlalchemy import select

    from evaluators.tables import reward_records
    chat = select(reward_records.c.position).where(reward_records.c.specialist == "chat")
    assert stats.of_positions(chat).histograms == {"train": (0, 0, 1, 0, 0, 0, 0, 0, 0, 0)}
