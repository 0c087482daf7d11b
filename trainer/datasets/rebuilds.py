"""Many stored manifests rebuilt from their rewards and events, one after another (the
audit's manifest and training checks), in bounded memory.

Successive manifests share most of their rewards (each held-out side lists every earlier
held-out reward), so each reward's example is built once, with its digest line, and kept
for the manifests after it: a manifest then costs its hashing, not its rewards' reads and
examples again. At most ``capacity`` rewards are kept, the least recently used dropped
first, so memory stays bounded whatever the number of manifests; the stored rows are
read a page at a time (``Manifests.scan_stored``).
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evaluators.model import RewardRecord
from evaluators.rewards import RewardStore
from events.store import EventStore
from trainer.datasets.manifest import (
    EventView,
    Manifest,
    ManifestExample,
    RewardRow,
    combine,
    example_line,
    example_of,
    examples_digest_of,
)
from trainer.datasets.manifests import reward_row


@dataclass(frozen=True)
class _Built:
    """A reward as a manifest uses it: its row, the example it yields and its digest line."""

    row: RewardRow
    example: ManifestExample | None
    line: bytes | None


class ManifestRebuilds:
    def __init__(self, rewards: RewardStore, store: EventStore, capacity: int = 50_000) -> None:
        self.rewards, self.store, self.capacity = rewards, store, capacity
        self.kept: OrderedDict[str, _Built] = OrderedDict()

    def verdict(self, row: Mapping[str, Any]) -> str | None:
        """None when the stored manifest ``row`` rebuilds to its content hash, else why not
        (every listed reward, in position order, a reward listed twice twice)."""
        found = self._built(str(i) for i in row["reward_ids"])
        used = sorted((found[str(i)] for i in row["reward_ids"] if str(i) in found),
                      key=lambda b: b.row.position)
        rebuilt = self._combine(row, used)
        missing = len(row["reward_ids"]) - len(used)
        return None if rebuilt.content_hash == row["content_hash"] else (
            f"no longer rebuilds to its content hash {row['content_hash'][:12]}… "
            f"(got {rebuilt.content_hash[:12]}…; {missing} of its rewards missing)")

    def frozen_verdict(self, frozen: Mapping[str, Any]) -> str | None:
        """``verdict`` of the manifest a ``dataset.frozen`` payload describes, as the row its
        projector makes of it (the caller knows the stored row is that row). Its content
        hash then holds exactly when every listed reward is stored and yields an example,
        in position order, and the examples hash to the ``examples_sha256`` it froze: that
        is checked here, the content hashed only when it does not hold (for the message)."""
        ids = [str(i) for i in frozen["reward_ids"]]
        found = self._built(ids)
        used = [found.get(i) for i in ids]
        if all(b is not None and b.line is not None for b in used):
            lines = [b.line for b in used if b is not None and b.line is not None]
            positions = [b.row.position for b in used if b is not None]
            if positions == sorted(positions) and examples_digest_of(lines) == frozen["examples_sha256"]:
                return None
        return self.verdict(frozen)

    def rebuild(self, row: Mapping[str, Any]) -> Manifest:
        """The manifest ``row`` rebuilt as ``Manifests.rebuild`` does (its stored rewards,
        each once, in position order); the caller compares the content hash."""
        found = self._built(str(i) for i in row["reward_ids"])
        return self._combine(row, sorted(found.values(), key=lambda b: b.row.position))

    def _combine(self, row: Mapping[str, Any], used: Sequence[_Built]) -> Manifest:
        lines = {id(b.example): b.line for b in used if b.example is not None and b.line is not None}
        return combine(row["specialist"], row["cut_from"], row["cut_to"], [(b.row, b.example) for b in used],
                       line=lambda example: lines[id(example)])

    def _built(self, reward_ids: Iterable[str]) -> dict[str, _Built]:
        """The stored rewards among ``reward_ids``, built (kept ones first), by id."""
        found: dict[str, _Built] = {}
        missing: list[uuid.UUID] = []
        for reward_id in reward_ids:
            kept = self.kept.get(reward_id)
            if kept is not None:
                found[reward_id] = kept
                self.kept.move_to_end(reward_id)
            elif reward_id not in found:
                try:
                    missing.append(uuid.UUID(reward_id))
                except ValueError:
                    continue  # an altered row may hold anything: not a stored reward
        if missing:
            records = self.rewards.by_ids(missing)
            events = self.store.get_many(e for r in records for e in r.event_ids)
            views = {i: EventView(i, e.position, e.type, e.payload) for i, e in events.items()}
            for record in records:
                built = _build(record, views)
                found[built.row.reward_id] = self.kept[built.row.reward_id] = built
        while len(self.kept) > self.capacity:
            self.kept.popitem(last=False)
        return found


def _build(record: RewardRecord, events: Mapping[str, EventView]) -> _Built:
    row = reward_row(record)
    example = example_of(row, {e: events[e] for e in row.event_ids if e in events})
    return _Built(row, example, None if example is None else example_line(example))
