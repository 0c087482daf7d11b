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
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

import orjson

from evaluators.model import RewardRecord
from events.server_events import ServerEvent
from kernel.canonical import canonical_json

GENESIS_HASH = "0" * 64
SEAL_STREAM = "rewards:seals"


class RewardSealed(ServerEvent):
    """The reward chain's head, sealed into the log; it changes no table (the reward records
    are their own chained record)."""

    TYPE = "reward.sealed"
    SUMMARY = "The reward chain's head (position and hash), sealed into the log before a checkpoint"

    from_position: int
    to_position: int
    head_hash: str


SEAL_TYPE = RewardSealed.TYPE


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
    """The hash of ``record`` (at ``position`` when given, else its own) after ``prev_hash``:
    sha256(prev_hash + canonical JSON of ``chained_content``)."""
    at = record.position if position is None else position
    if type(at) is int and (template := link_template(record)) is not None:
        return template.hash(prev_hash, at)
    content = chained_content(record, position)
    return hashlib.sha256((prev_hash + canonical_json(content)).encode()).hexdigest()


def chained(record: RewardRecord, position: int, prev_hash: str,
            template: LinkTemplate | None = None) -> RewardRecord:
    """``record`` placed at ``position`` after the row hashed ``prev_hash``, with its hash
    (one copy of the record, not one to hash and another to store). ``template``: the
    record's ``link_template``, made ahead (outside the writers' lock)."""
    if template is None:
        return record.placed(position, prev_hash, reward_hash(prev_hash, record, position))
    return record.placed(position, prev_hash, template.hash(prev_hash, position))


# --- the same bytes, fast --------------------------------------------------------------
# ``canonical_json(chained_content(r))`` builds the nested wire form, copies and pops it,
# and json sorts and writes it: ~20 us per reward, paid under the reward writers' lock.
# orjson writes the same bytes (a tenth of the time) where it provably does: sorted keys,
# no spaces, UTF-8 and the same escapes hold for any JSON; floats are the same text when
# finite and 0 or at least 1e-4 in size (below, json writes 1e-05 and orjson 0.00001). The
# other fields are strings, ints, bools and None by the record's types; event ids are
# checked, being the one list. Anything else (an error list, an int over 64 bits, a lone
# surrogate) takes json. And the position is the one part known only under the lock: its
# key sorts between "gates" and "reward_id", so the bytes before and after it are written
# ahead, straight from the record's fields, and the link under the lock is one sha256 over
# prev_hash + head + position + tail (tests/unit/evaluators/test_chain_bytes.py).


class LinkTemplate(NamedTuple):
    """A record's canonical JSON cut where its position goes (a tuple: one per reward)."""

    head: bytes  # '{"adapter_version":...,"gates":{...},"position":'
    tail: bytes  # ',"reward_id":...,"tenant":...}'

    def hash(self, prev_hash: str, position: int) -> str:
        """The record's chain hash at ``position`` after ``prev_hash``."""
        return hashlib.sha256(b"%s%s%d%s" % (prev_hash.encode(), self.head, position, self.tail)).hexdigest()

    def canonical(self, position: int) -> bytes:
        """The canonical JSON of the record's chained content at ``position``."""
        return b"%s%d%s" % (self.head, position, self.tail)


def link_template(record: RewardRecord) -> LinkTemplate | None:
    """The record's ``LinkTemplate``; None where orjson might not write json's bytes.

    Written as one document with position 0 and cut at the last ``"position":0,`` before
    ``"reward_id"``: a key of the components or gates could read the same, but those come
    before the top-level key, and after it there are only the fixed keys of the subject
    and string values (whose quotes are escaped)."""
    score, created = record.score, record.created_at
    created_json: datetime | str = created
    if record.errors or record.judgements or not _all_plain(score, record.components, record.gates,
                                                             record.event_ids):
        return None
    # orjson writes an aware UTC datetime as isoformat does, but for a whole second
    # (where isoformat(timespec="microseconds") still writes ".000000").
    if type(created) is not datetime or created.tzinfo is not UTC or not created.microsecond:
        created_json = created.astimezone(UTC).isoformat(timespec="microseconds")
    try:
        text = orjson.dumps({
            "adapter_version": record.adapter_version, "components": record.components,
            "contract": {"content_hash": record.contract_hash, "name": record.contract_name,
                         "version": record.contract_version},
            "created_at": created_json, "eligible": record.eligible, "errors": [],
            "evaluator_version": record.evaluator_version, "gates": record.gates, "position": 0,
            "reward_id": _uuid_text(record.reward_id),
            "score": None if score is None else float(score),
            "specialist": record.specialist, "split": record.split,
            "subject": {"event_ids": record.event_ids, "first_position": record.first_position,
                        "id": record.subject_id, "kind": record.subject_kind,
                        "last_position": record.last_position, "stream_id": record.stream_id},
            "tenant": record.tenant,
        }, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return None
    cut = text.rfind(_POSITION_0)
    return LinkTemplate(text[:cut + _HEAD_END], text[cut + _TAIL_START:])


_POSITION_0 = b',"position":0,"reward_id":'
_HEAD_END = len(b',"position":')
_TAIL_START = len(b',"position":0')


def _uuid_text(value: Any) -> Any:
    # orjson writes a UUID as str() does; anything else goes as its text
    return value if type(value) is uuid.UUID else str(value)


def _all_plain(score: Any, components: Any, gates: Any, event_ids: Any) -> bool:
    """Whether the numbers are ones json and orjson write alike, the gates bools and the
    event ids strings (one loop per field: a generator and a call per value cost twice)."""
    if not (score is None or type(score) is int
            or (type(score) is float and (score == 0.0 or 1e-4 <= abs(score) < math.inf))):
        return False
    for value in components.values():
        if not (type(value) is int or (type(value) is float
                                       and (value == 0.0 or 1e-4 <= abs(value) < math.inf))):
            return False
    for passed in gates.values():
        if type(passed) is not bool:
            return False
    for event_id in event_ids:  # noqa: SIM110 (see the docstring)
        if type(event_id) is not str:
            return False
    return True


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
