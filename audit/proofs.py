"""Proofs served to auditors: an event's inclusion in a signed checkpoint, and the
consistency of two checkpoints (RFC 9162 shapes, as ``audit.verify`` checks them offline).

An inclusion proof is three primary-key reads on one connection: the event's position
and hash, the checkpoint, and the proof's O(log n) nodes in one query.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy.engine import Connection, Engine

from audit.checkpoint_store import CheckpointStore, StoredCheckpoint
from audit.merkle import inclusion_ranges
from audit.sql_nodestore import SqlNodeStore
from audit.tree import MerkleTree, range_hashes
from audit.verify import ConsistencyBundle, InclusionBundle
from events.store import EventStore
from kernel.db import is_postgres
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
        with self._reading() as conn:
            event = self.store.chain_link(event_id, conn)
            if event is None:
                raise EventNotFound(f"no event {event_id}")
            cp = self._checkpoint(checkpoint, conn)
            size = cp.checkpoint.size
            if size < event.position:
                raise NotYetCovered(f"event {event_id} is at position {event.position}, after checkpoint "
                                    f"{cp.position} (size {size}): sign a newer checkpoint")
            # The tree reached ``size`` before it was signed: no need to ask its size again.
            ranges = inclusion_ranges(event.position - 1, size)
            proof = range_hashes(SqlNodeStore(self.engine, conn), ranges)
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

    def _reading(self) -> Connection:
        """One connection for the three primary-key reads of a proof: a checkout of its own
        would cost a ping each. On PostgreSQL in autocommit: no BEGIN and ROLLBACK round
        trips, and no snapshot is needed, since every row read is append-only and a
        checkpoint never covers more of the tree than was built before it was signed."""
        conn = self.engine.connect()
        return conn.execution_options(isolation_level="AUTOCOMMIT") if is_postgres(self.engine) else conn

    def _checkpoint(self, position: int | None, conn: Connection | None = None) -> StoredCheckpoint:
        if position is not None:
            return self.checkpoints.get(position, conn)
        latest = self.checkpoints.latest(conn)
        if latest is None:
            raise NotYetCovered("no checkpoint has been signed yet (POST /v1/audit/checkpoints, "
                                "or `hcp audit checkpoint create`)")
        return latest
