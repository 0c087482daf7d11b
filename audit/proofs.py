"""Proofs served to auditors: an event's inclusion in a signed checkpoint, and the
consistency of two checkpoints (RFC 9162 shapes, as ``audit.verify`` checks them offline).

An inclusion proof is two round trips on one connection: the event's position and hash,
then the proof's O(log n) nodes (those of the tree's upper levels kept in memory) with the
latest checkpoint's position (``audit.proof_reads``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy.engine import Connection, Engine

from audit.checkpoint_store import CheckpointStore, StoredCheckpoint
from audit.merkle import fold, inclusion_ranges, range_nodes
from audit.proof_reads import UpperLevels
from audit.sql_nodestore import SqlNodeStore
from audit.tree import MerkleTree
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
        self._upper = UpperLevels()
        self._latest: StoredCheckpoint | None = None  # the latest checkpoint this process has seen

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
            cp = self._checkpoint(checkpoint, conn) if checkpoint is not None else self._seen(conn)
            proof, latest = self._path(conn, event.position, cp)
            if checkpoint is None and latest != cp.position:  # signed since: prove in that one
                cp = self._seen(conn, refresh=True)
                proof, _ = self._path(conn, event.position, cp)
            if cp.checkpoint.size < event.position:
                raise NotYetCovered(f"event {event_id} is at position {event.position}, after checkpoint "
                                    f"{cp.position} (size {cp.checkpoint.size}): sign a newer checkpoint")
        bundle = InclusionBundle(event.hash, event.position - 1, cp.note, tuple(proof))
        return InclusionAnswer(str(event_id), event.position, cp.position, bundle)

    def _path(self, conn: Connection, position: int, cp: StoredCheckpoint) -> tuple[list[bytes], int]:
        """The audit path of ``position`` in ``cp``'s tree (which reached its size before it
        was signed: no need to ask the tree's size), and the latest checkpoint's position."""
        size = cp.checkpoint.size
        if size < position:
            return [], -1  # not covered by what this process saw: look again before refusing
        plans = [range_nodes(a, b) for a, b in inclusion_ranges(position - 1, size)]
        found, latest = self._upper.read(conn, {node for plan in plans for node in plan})
        return [fold([found[node] for node in plan]) for plan in plans], latest

    def _seen(self, conn: Connection, refresh: bool = False) -> StoredCheckpoint:
        if self._latest is None or refresh:
            self._latest = self._checkpoint(None, conn)
        return self._latest

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
