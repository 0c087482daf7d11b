"""Proofs served to auditors: an event's inclusion in a signed checkpoint, and the
consistency of two checkpoints (RFC 9162 shapes, as ``audit.verify`` checks them offline).

An inclusion proof is four primary-key reads: the event, the checkpoint, the tree size
and the proof's O(log n) nodes in one query, all on one connection.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy.engine import Engine

from audit.checkpoint_store import CheckpointStore, StoredCheckpoint
from audit.sql_nodestore import SqlNodeStore
from audit.tree import MerkleTree
from audit.verify import ConsistencyBundle, InclusionBundle
from events.store import EventStore
from kernel.errors import Conflict, Invalid, NotFound


class EventNotFound(NotFound):
    pass


class NotYetCovered(Conflict):
    """The event is newer than every signed checkpoint (sign one: POST /v1/audit/checkpoints)."""

    code = "not_yet_checkpointed"


@dataclass(frozen=True)
class InclusionAnswer:
    event_id: str
    position: int
    checkpoint_position: int
    bundle: InclusionBundle


class Proofs:
    def __init__(self, engine: Engine, store: EventStore, checkpoints: CheckpointStore) -> None:
        self.engine, self.store, self.checkpoints = engine, store, checkpoints

    def inclusion(self, event_id: uuid.UUID, checkpoint: int | None = None) -> InclusionAnswer:
        """The audit path of the event in ``checkpoint`` (default: the latest one).

        Raises:
            EventNotFound, CheckpointNotFound: no such event or checkpoint.
            NotYetCovered: the checkpoint was signed before the event was appended.
        """
        event = self.store.get(event_id)
        if event is None:
            raise EventNotFound(f"no event {event_id}")
        cp = self._checkpoint(checkpoint)
        if cp.checkpoint.size < event.position:
            raise NotYetCovered(f"event {event_id} is at position {event.position}, after checkpoint "
                                f"{cp.position} (size {cp.checkpoint.size}): sign a newer checkpoint")
        with self.engine.connect() as conn:
            proof = MerkleTree(SqlNodeStore(self.engine, conn)).inclusion_proof(
                event.position - 1, cp.checkpoint.size)
        bundle = InclusionBundle(event.hash, event.position - 1, cp.note, tuple(proof))
        return InclusionAnswer(str(event_id), event.position, cp.position, bundle)

    def consistency(self, old: int, new: int | None = None) -> ConsistencyBundle:
        """That checkpoint ``old``'s tree is a prefix of checkpoint ``new``'s (default latest)."""
        first, second = self.checkpoints.get(old), self._checkpoint(new)
        if first.checkpoint.size > second.checkpoint.size:
            raise Invalid(f"checkpoint {old} (size {first.checkpoint.size}) is larger than checkpoint "
                          f"{second.position} (size {second.checkpoint.size}): swap them")
        with self.engine.connect() as conn:
            proof = MerkleTree(SqlNodeStore(self.engine, conn)).consistency_proof(
                first.checkpoint.size, second.checkpoint.size)
        return ConsistencyBundle(first.note, second.note, tuple(proof))

    def _checkpoint(self, position: int | None) -> StoredCheckpoint:
        if position is not None:
            return self.checkpoints.get(position)
        latest = self.checkpoints.latest()
        if latest is None:
            raise NotYetCovered("no checkpoint has been signed yet (POST /v1/audit/checkpoints, "
                                "or `hcp audit checkpoint create`)")
        return latest
