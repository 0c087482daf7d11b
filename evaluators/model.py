"""Reward records as frozen values, and how one is made from an evaluation. Pure: no I/O."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from contract.evaluate import Evaluation
from contract.subject import Subject
from events.model import RecordedEvent
from kernel.uuids import uuid_of_int

# Stored with every reward: which scoring code produced it, next to the contract's hash.
EVALUATOR_VERSION = "evaluator-1"

# Reward ids are derived, not random: a subject re-scored under the same version after a
# crash gets the same id, so a consumer of hcp.rewards can de-duplicate on it too.
_REWARD_NAMESPACE = uuid.UUID("6d1c7f0e-2b55-4d8e-9a41-3f5b8e0c9a17")


@dataclass(frozen=True)
class VersionRef:
    """A published contract version as a reward names it."""

    name: str
    version: int
    content_hash: str

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"


@dataclass(frozen=True)
class RewardRecord:
    """One subject judged under one contract version; ``position`` is set when stored."""

    reward_id: uuid.UUID
    subject_id: str
    subject_kind: str
    stream_id: str
    first_position: int
    last_position: int
    event_ids: tuple[str, ...]
    contract_name: str
    contract_version: int
    contract_hash: str
    evaluator_version: str
    score: float | None  # None exactly when ``errors`` is non-empty: never a silent zero
    components: Mapping[str, float]
    gates: Mapping[str, bool]
    split: str
    specialist: str | None
    adapter_version: str | None
    eligible: bool
    errors: tuple[Mapping[str, str], ...] = ()
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    position: int | None = None
    tenant: str | None = None  # the subject's tenant; None: operators only (see subject_tenant)
    prev_hash: str | None = None  # the reward chain (evaluators/chain.py), set when stored
    hash: str | None = None
    # The judges' verdicts the score rests on (contract/judges.py ``judgement``: the judge
    # model's digest, the prompt's hash, the seed, the raw verdict and how it was read);
    # empty when the contract has no judge.
    judgements: tuple[Mapping[str, Any], ...] = ()

    def placed(self, position: int, prev_hash: str, hash: str) -> RewardRecord:
        """This record at ``position`` in the reward chain.

        A copy of the fields rather than ``dataclasses.replace``, which reads every field
        through ``getattr`` and runs ``__init__`` again: a third of the cost of storing a
        reward's chain link. The fields are values already checked by ``__init__``.
        """
        copy = object.__new__(RewardRecord)
        copy.__dict__.update(self.__dict__, position=position, prev_hash=prev_hash, hash=hash)
        return copy

    @property
    def key(self) -> tuple[str, str, int]:
        """The uniqueness key: one reward per (subject, contract version)."""
        return (self.subject_id, self.contract_name, self.contract_version)

    def to_json(self) -> dict[str, Any]:
        """The documented wire form (API responses and hcp.rewards values)."""
        return {
            "reward_id": str(self.reward_id),
            "position": self.position,
            "subject": {
                "id": self.subject_id,
                "kind": self.subject_kind,
                "stream_id": self.stream_id,
                "first_position": self.first_position,
                "last_position": self.last_position,
                "event_ids": list(self.event_ids),
            },
            "contract": {"name": self.contract_name, "version": self.contract_version,
                         "content_hash": self.contract_hash},
            "evaluator_version": self.evaluator_version,
            "score": self.score,
            "components": dict(sorted(self.components.items())),
            "gates": dict(sorted(self.gates.items())),
            "split": self.split,
            "specialist": self.specialist,
            "adapter_version": self.adapter_version,
            "eligible": self.eligible,
            "tenant": self.tenant,
            "errors": [dict(e) for e in self.errors],
            "created_at": self.created_at.astimezone(UTC).isoformat(timespec="microseconds"),
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        } | self._judged()

    def _judged(self) -> dict[str, Any]:
        # Only when there are some: rewards made before judges existed keep their chain hashes.
        return {"judgements": [dict(j) for j in self.judgements]} if self.judgements else {}


def reward_id_for(subject_id: str, name: str, version: int) -> uuid.UUID:
    """``uuid.uuid5(_REWARD_NAMESPACE, ...)``, made without its argument checks (a fifth
    of the time; one per reward)."""
    hasher = _NAMESPACE_SHA1.copy()  # (the namespace hashed once)
    hasher.update(f"{subject_id}\x00{name}\x00{version}".encode())
    digest = hasher.digest()
    return uuid_of_int((int.from_bytes(digest[:16]) & _CLEAR_VERSION_VARIANT) | _VERSION_5_RFC_4122)


_NAMESPACE_SHA1 = hashlib.sha1(_REWARD_NAMESPACE.bytes, usedforsecurity=False)
_CLEAR_VERSION_VARIANT = ~((0xF000 << 64) | (0xC000 << 48))
_VERSION_5_RFC_4122 = (5 << 76) | (0x8000 << 48)


def reward_for(subject: Subject, version: VersionRef, evaluation: Evaluation,
               subject_input: Mapping[str, Any]) -> RewardRecord:
    """The record of an applicable evaluation (errors included: they are recorded, not dropped)."""
    errors = tuple(e.to_json() for e in evaluation.errors) if evaluation.errors else ()
    return _record(subject, version, None if errors else evaluation.score,
                   dict(evaluation.components), dict(evaluation.gates), evaluation.split,
                   _text(subject_input.get("specialist")), _text(subject_input.get("adapter_version")),
                   evaluation.eligible and not errors, errors, evaluation.judgements)


def failed_reward(subject: Subject, version: VersionRef, message: str, split: str) -> RewardRecord:
    """A subject the evaluator itself could not process (a bug, not a rubric error):
    still one record, so it is visible and the worker does not stop on it."""
    error = {"item": "evaluator", "message": message[:500], "kind": "internal"}
    return _record(subject, version, None, {}, {}, split, None, None, False, (error,))


def _record(subject: Subject, version: VersionRef, score: float | None, components: dict[str, float],
            gates: dict[str, bool], split: str, specialist: str | None, adapter_version: str | None,
            eligible: bool, errors: tuple[Mapping[str, str], ...],
            judgements: tuple[Mapping[str, Any], ...] = ()) -> RewardRecord:
    """A new record of ``subject`` under ``version``, with where it came from.

    Its fields set as ``RewardRecord.placed`` sets them, without the frozen dataclass's
    ``__init__`` (an ``object.__setattr__`` per field, 25 of them: a sixth of scoring a
    subject's reward); every field is a value made here, and nothing checks them there.
    """
    events = subject.events
    record = _new(RewardRecord)
    record.__dict__.update({
        "reward_id": reward_id_for(subject.id, version.name, version.version),
        "subject_id": subject.id, "subject_kind": subject.kind, "stream_id": subject.stream_id,
        "first_position": events[0].position, "last_position": events[-1].position,
        "event_ids": _event_ids(events),
        "contract_name": version.name, "contract_version": version.version,
        "contract_hash": version.content_hash, "evaluator_version": EVALUATOR_VERSION,
        "score": score, "components": components, "gates": gates, "split": split,
        "specialist": specialist, "adapter_version": adapter_version, "eligible": eligible,
        "errors": errors, "created_at": datetime.now(UTC), "position": None,
        "tenant": subject_tenant(subject), "prev_hash": None, "hash": None,
        "judgements": judgements,
    })
    return record


_new = object.__new__


def _event_ids(events: Sequence[RecordedEvent]) -> tuple[str, ...]:
    """``str(event.event_id)`` of each event, formatted from the hex digits at once
    (``UUID.__str__`` is a Python method: twice the time, for every event of every reward)."""
    return tuple([f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
                  for h in ["%032x" % e.event_id.int for e in events]])  # noqa: UP031 (faster)


def subject_tenant(subject: Subject) -> str | None:
    """The tenant every event of the subject belongs to; None when they disagree (a
    stream written before keys had tenants), which leaves the reward to operators."""
    events = subject.events
    tenant = events[0].metadata.tenant if events else None
    for event in events:
        if event.metadata.tenant != tenant:
            return None
    return tenant


def errors_text(errors: Sequence[Mapping[str, str]]) -> str | None:
    """The ``error`` column: the errors as JSON, or NULL when there are none."""
    return json.dumps([dict(e) for e in errors], sort_keys=True) if errors else None


def errors_from_text(text: str | None) -> tuple[dict[str, str], ...]:
    if not text:
        return ()
    try:
        value = json.loads(text)
    except ValueError:
        return ({"item": "", "message": text, "kind": "runtime"},)
    return tuple(value) if isinstance(value, list) else ({"item": "", "message": text, "kind": ""},)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
