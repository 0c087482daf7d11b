"""The manifests' tables as projections of ``dataset.frozen``.

A manifest row, its members and its per-contract-version counts all follow from the
event's reward ids and the reward records they name (source ``rewards_by_id``: the
reward store's, read in the caller's transaction). The rebuilt content must hash to the
event's content hash, or the event cannot be projected: the rewards it names are not the
ones it froze.

Each event's rows carry its manifest id and no other event's do, so the three tables are
checked manifest by manifest (``Projection.group``): the members of every manifest
together outgrow memory (each held-out side lists every earlier held-out reward).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from itertools import repeat
from operator import attrgetter
from typing import Any

from evaluators.model import RewardRecord
from events.projections.model import (
    Change,
    Insert,
    InsertMany,
    Projection,
    ProjectionError,
    ProjectionSet,
    State,
)
from events.server_events import Logged
from trainer.datasets.events import DatasetFrozen
from trainer.datasets.manifest import HELD_OUT, TRAIN, manifest_hash
from trainer.datasets.tables import dataset_manifests, manifest_contract_versions, manifest_members

# The source: reward ids -> a mapping from id (as text) to its record, holding each of the
# ids that is stored (it may hold others too).
REWARDS = "rewards_by_id"
RewardsById = Callable[[Sequence[str]], Mapping[str, RewardRecord]]
# The write path's own source: the content hash its writer has just computed from these very
# rewards, in the transaction that appends the event (``Manifests.freeze_in``). Hashing the
# content again there would only repeat that work (a third of what projecting a firing
# costs); a replay has no such source and re-hashes every manifest.
HASHED_BY_WRITER = "content_hash_by_writer"


def _rewards(done: Logged[Any], state: State) -> list[RewardRecord]:
    e = done.event
    assert isinstance(e, DatasetFrozen)
    found = state.source(REWARDS)(e.reward_ids)
    missing = [i for i in e.reward_ids if i not in found]
    if missing:
        raise ProjectionError(f"{len(missing)} of its rewards are not in the reward records "
                              f"(first {missing[0]})")
    return [found[i] for i in e.reward_ids]


def manifest_row(e: DatasetFrozen, rewards: Sequence[RewardRecord], created_at: datetime,
                 hashed: str | None = None) -> dict[str, Any]:
    """The manifest's row as its rewards (those of ``e.reward_ids``, in order) make it (the
    hashed content and the rest); ``hashed``: the content hash the writer computed of the
    same content in this transaction, when it did."""
    content = manifest_content(e, rewards)
    if hashed != e.content_hash and manifest_hash(content) != e.content_hash:
        raise ProjectionError(f"its rewards make content hash {manifest_hash(content)[:12]}…, not the "
                              f"{e.content_hash[:12]}… it froze")
    return {**content, "manifest_id": e.manifest_id, "content_hash": e.content_hash,
            "example_count": len(rewards), "created_at": created_at}


def manifest_content(e: DatasetFrozen, rewards: Sequence[RewardRecord]) -> dict[str, Any]:
    """What the event's content hash covers, as its rewards make it."""
    # map and attrgetter rather than loops: a check runs this for every member of every
    # manifest (5.2M at the lineage bench's scale).
    versions = sorted(set(map(attrgetter("contract_name", "contract_version", "contract_hash"), rewards)))
    splits = Counter(map(attrgetter("split"), rewards))
    return {
        "specialist": e.specialist, "cut_from": e.cut_from, "cut_to": e.cut_to,
        "reward_ids": list(e.reward_ids),  # each one its record's id (``_rewards``)
        "subject_event_ids": dict(zip(map(attrgetter("subject_id"), rewards),
                                      map(list, map(attrgetter("event_ids"), rewards)), strict=True)),
        "contract_versions": [{"name": n, "version": v, "hash": h} for n, v, h in versions],
        "split": {TRAIN: splits[TRAIN], HELD_OUT: splits[HELD_OUT]},
        "examples_sha256": e.examples_sha256}


def _manifests(done: Logged[Any], state: State) -> list[Change]:
    e = done.event
    assert isinstance(e, DatasetFrozen)
    at = datetime.fromisoformat(e.frozen_at) if e.frozen_at else done.recorded_at
    try:
        hashed = state.source(HASHED_BY_WRITER)()
    except LookupError:  # a replay: the content is hashed here
        hashed = None
    return [Insert("dataset_manifests", manifest_row(e, _rewards(done, state), at, hashed))]


MEMBER_COLUMNS = ("manifest_id", "reward_position", "reward_id", "subject_id", "stream_id", "split")


def _members(done: Logged[Any], state: State) -> list[Change]:
    manifest_id, ids = done.event.manifest_id, done.event.reward_ids
    rewards = _rewards(done, state)
    column = [map(attrgetter(name), rewards) for name in ("position", "subject_id", "stream_id", "split")]
    return [InsertMany("manifest_members", MEMBER_COLUMNS, list(zip(  # (repeat: endless)
        repeat(manifest_id), column[0], ids, column[1], column[2], column[3], strict=False)))]


def _contract_counts(done: Logged[Any], state: State) -> list[Change]:
    counts = Counter((r.contract_name, r.contract_version) for r in _rewards(done, state))
    return [Insert("manifest_contract_versions", {"manifest_id": done.event.manifest_id,
                                                  "contract_name": name, "contract_version": version,
                                                  "reward_count": n})
            for (name, version), n in sorted(counts.items())]


def _manifest_of(done: Logged[Any]) -> str:
    return str(done.event.manifest_id)


DATASET_MANIFESTS = Projection(dataset_manifests, (DatasetFrozen,), _manifests, group="manifest_id",
                               event_group=_manifest_of)
MANIFEST_MEMBERS = Projection(manifest_members, (DatasetFrozen,), _members, group="manifest_id",
                              event_group=_manifest_of)
MANIFEST_CONTRACT_VERSIONS = Projection(manifest_contract_versions, (DatasetFrozen,), _contract_counts,
                                        group="manifest_id", event_group=_manifest_of)
DATASET_PROJECTIONS = ProjectionSet(DATASET_MANIFESTS, MANIFEST_MEMBERS, MANIFEST_CONTRACT_VERSIONS)
