"""The reward records' own hash chain: tamper evidence that names the reward. Pure.

Reward records are not events, so the event log's chain does not cover them. Each row
carries ``prev_hash`` (the hash of the row at the position before it) and ``hash`` =
SHA-256(prev_hash || canonical JSON of the record's wire form, hashes left out). It is
verified like the event chain: a changed score breaks that row's own hash (the reward is
named), a deleted row leaves a position gap, a row moved or inserted breaks a link.

Why a chain rather than only a periodic digest event: a digest over a range says *that*
something in the range changed, not *which* reward; the chain names it at once, costs
one hash per insert under the lock the writer already holds, and needs no schedule. Its
weakness is the event chain's: a superuser who rewrites a row *and* recomputes every
later hash leaves a valid chain. ``reward.sealed`` events close that gap: the checkpoint
signer appends one before it signs, carrying the chain head (position and hash), so the
head is covered by the log's own chain, its Merkle tree and the signed checkpoint, and a
rewritten reward chain no longer reaches the sealed head.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from evaluators.model import RewardRecord
from kernel.canonical import canonical_json

GENESIS_HASH = "0" * 64
SEAL_TYPE = "reward.sealed"
SEAL_STREAM = "rewards:seals"


def chained_content(record: RewardRecord, position: int | None = None) -> dict[str, Any]:
    """What the hash covers: the wire form (position included) without the two hashes;
    ``position``: the one the record is about to take, in place of its own.

    The score is hashed as a float: an int score written from memory (1) must hash the
    same as the float the database hands back (1.0).
    """
    content = record.to_json()
    if position is not None:
        content["position"] = position
    content.pop("prev_hash", None)
    content.pop("hash", None)
    if content["score"] is not None:
        content["score"] = float(content["score"])
    return content


def reward_hash(prev_hash: str, record: RewardRecord, position: int | None = None) -> str:
    """The hash of ``record`` (at ``position`` when given, else its own) after ``prev_hash``."""
    content = chained_content(record, position)
    return hashlib.sha256(prev_hash.encode() + canonical_bytes(content, record)).hexdigest()


def canonical_bytes(content: dict[str, Any], record: RewardRecord) -> bytes:
    """``canonical_json(content).encode()``, written by orjson (a tenth of the time) where
    it provably writes the same bytes: sorted keys, no spaces, UTF-8 and the same escapes
    hold for any JSON; floats are the same text when finite and 0 or at least 1e-4 in
    size (below, json writes 1e-05 and orjson 0.00001). The other fields are strings,
    ints, bools and None by the record's types; event ids are checked, being the one list.
    Anything else (an error list, an int over 64 bits, a lone surrogate) takes json."""
    if (not record.errors and _plain(record.score)
            and all(_plain(v) for v in record.components.values())
            and all(type(v) is bool for v in record.gates.values())
            and all(type(e) is str for e in record.event_ids)):
        try:
            return orjson.dumps(content, option=orjson.OPT_SORT_KEYS)
        except (TypeError, orjson.JSONEncodeError):
            pass
    return canonical_json(content).encode()


def _plain(value: Any) -> bool:
    """A number (or None) that json and orjson write alike."""
    if value is None or type(value) is int:
        return True
    return type(value) is float and (value == 0.0 or 1e-4 <= abs(value) < math.inf)


def chained(record: RewardRecord, position: int, prev_hash: str) -> RewardRecord:
    """``record`` placed at ``position`` after the row hashed ``prev_hash``, with its hash
    (one copy of the record, not one to hash and another to store)."""
    return record.placed(position, prev_hash, reward_hash(prev_hash, record, position))


@dataclass(frozen=True)
class RewardBreak:
    """Where the reward chain breaks: the position, the reward there (if any), and why."""

    position: int
    reward_id: str | None
    reason: str


def verify_rewards(records: Iterable[RewardRecord], start_position: int = 1,
                   start_prev_hash: str = GENESIS_HASH) -> tuple[int, list[RewardBreak]]:
    """Walk stored records in position order from ``start_position``; return how many were
    checked and every break (not only the first: each changed reward should be named)."""
    expected, prev_hash, checked = start_position, start_prev_hash, 0
    breaks: list[RewardBreak] = []
    for record in records:
        checked += 1
        rid = str(record.reward_id)
        if record.position != expected:
            breaks.append(RewardBreak(expected, None, f"reward position {expected} is missing "
                                                      f"(next stored is {record.position})"))
        elif record.prev_hash != prev_hash:
            breaks.append(RewardBreak(expected, rid, "prev_hash does not match the previous reward's "
                                                     "hash (a row was removed, moved or rewritten)"))
        if reward_hash(record.prev_hash or "", record) != record.hash:
            breaks.append(RewardBreak(record.position or 0, rid,
                                      "hash does not match the record's content (the reward was altered)"))
        expected, prev_hash = (record.position or 0) + 1, record.hash or ""
    return checked, breaks


def check_own_hash(record: RewardRecord) -> str | None:
    """Why one stored record fails its own hash, or None."""
    if reward_hash(record.prev_hash or "", record) != record.hash:
        return "hash does not match the record's content (the reward was altered)"
    return None
