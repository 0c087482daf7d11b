"""Which records trained an adapter version: its dataset manifest's members (paged, by
split and score), each with its session and reward, and the examples its run actually
selected from them, in training order (the run's ``training.succeeded`` event records
their reward ids).

Members come from the manifests' index in reward position order, their scores from the
reward store, one page at a time. A score bound is not in the index: a filtered page
reads members until it has a page of matches or has looked at ``SCAN`` of them, and then
says how far it looked, so a bound that matches nothing still costs a bounded read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from evaluators.model import RewardRecord
from events.server_events import logged
from hcp.bootstrap import Container
from kernel.errors import Invalid
from trainer.datasets.manifest import HELD_OUT, TRAIN
from trainer.journal import run_stream
from trainer.runs.events import TrainingSucceeded

PAGE = 50
SCAN = 2000
SPLITS = (TRAIN, HELD_OUT)


@dataclass(frozen=True)
class MemberFilter:
    split: str | None = None
    min_score: float | None = None
    max_score: float | None = None

    @property
    def by_score(self) -> bool:
        return self.min_score is not None or self.max_score is not None

    def keeps(self, reward: RewardRecord | None) -> bool:
        if not self.by_score:
            return True
        score = reward.score if reward else None
        if score is None:
            return False
        return ((self.min_score is None or score >= self.min_score)
                and (self.max_score is None or score <= self.max_score))

    def query(self) -> dict[str, str]:
        """As the filter form's fields."""
        return {"split": self.split or "", "min_score": _text(self.min_score),
                "max_score": _text(self.max_score)}


def member_filter(split: str, min_score: str, max_score: str) -> MemberFilter:
    """The filter from the form's text. Raises Invalid naming the field that is wrong."""
    split = split.strip()
    if split and split not in SPLITS:
        raise Invalid(f"split: choose {' or '.join(SPLITS)} (or any), not {split!r}")
    low, high = _score(min_score, "min_score"), _score(max_score, "max_score")
    if low is not None and high is not None and low > high:
        raise Invalid(f"min_score {low} is above max_score {high}")
    return MemberFilter(split or None, low, high)


def members(container: Container, manifest_id: str, selected: list[str] | None,
            where: MemberFilter, after: int = 0) -> dict[str, Any]:
    """A page of the manifest's members with position > ``after`` that ``where`` keeps,
    each marked with its place among the run's ``selected`` examples."""
    order = {reward_id: i for i, reward_id in enumerate(selected or [], 1)}
    batch_size = 500 if where.by_score else PAGE
    rows: list[dict[str, Any]] = []
    cursor, scanned, exhausted = after, 0, False
    while len(rows) < PAGE and scanned < SCAN and not exhausted:
        batch = container.manifest_index.members(manifest_id, cursor, batch_size, where.split)
        found = {str(r.reward_id): r for r in container.rewards.by_ids(m.reward_id for m in batch)}
        taken = 0
        for member in batch:
            taken, scanned, cursor = taken + 1, scanned + 1, member.reward_position
            reward = found.get(member.reward_id)
            if where.keeps(reward):
                rows.append({"member": member, "reward": reward, "selected": order.get(member.reward_id)})
                if len(rows) == PAGE:
                    break
        exhausted = len(batch) < batch_size and taken == len(batch)
    return {"rows": rows, "where": where, "after": after,
            "next_after": None if exhausted else cursor, "scanned": scanned,
            "scan_stopped": not exhausted and len(rows) < PAGE}


def selected_examples(container: Container, run_id: str) -> list[str] | None:
    """The reward ids the run trained on, in order; None where its events do not say
    (a run recorded before ``training.succeeded`` carried them, or one not finished)."""
    for event in reversed(container.store.read_stream(run_stream(run_id))):
        if event.type == TrainingSucceeded.TYPE:
            succeeded = logged(event).event
            assert isinstance(succeeded, TrainingSucceeded)
            return succeeded.examples
    return None


def selection(container: Container, manifest_id: str, chosen: list[str] | None,
              start: int = 0) -> dict[str, Any]:
    """A page of the examples the run selected (``chosen``), in training order from
    ``start``, each with its reward; and how many of the page the manifest does not list."""
    if chosen is None:
        return {"recorded": False}
    page = chosen[start:start + PAGE]
    found = {str(r.reward_id): r for r in container.rewards.by_ids(page)}
    reach = {r.manifest_id: r.members for r in container.manifest_index.holding_rewards(page)}
    return {"recorded": True, "count": len(chosen), "start": start,
            "rows": [{"ordinal": start + i, "reward_id": rid, "reward": found.get(rid)}
                     for i, rid in enumerate(page, 1)],
            "outside_manifest": len(set(page)) - reach.get(manifest_id, 0),
            "next_start": start + PAGE if start + PAGE < len(chosen) else None,
            "previous_start": max(0, start - PAGE) if start else None}


def _score(text: str, field: str) -> float | None:
    text = text.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise Invalid(f"{field}: expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise Invalid(f"{field}: expected a finite number, got {text!r}")
    return value


def _text(value: float | None) -> str:
    return "" if value is None else f"{value:g}"
