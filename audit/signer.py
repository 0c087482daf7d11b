"""Signing checkpoints of the log: on demand, and on a schedule.

Each checkpoint is one transaction under the checkpoint lock: the tree's size n (the
builder catches up first), its root, the chain hash of event n, a check that this tree
extends the previous checkpoint (a log must never sign two inconsistent checkpoints),
then the signed note is stored, and with it the intent to publish it (the relay's
``<prefix>.checkpoints`` feed tails the table). Before signing, ``before_signing`` runs
(the composition root seals the reward chain there, so the seal is in the tree).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from audit.builder import LogDoesNotExtendTree, TreeBuilder
from audit.checkpoint_store import CHECKPOINT_LOCK_KEY, CheckpointStore, StoredCheckpoint
from audit.checkpoints import Checkpoint, sign_checkpoint
from audit.keys import SigningKey
from audit.merkle import NodeId, ProofError, chain_leaf, leaf_hash, verify_consistency
from audit.sql_nodestore import SqlNodeStore
from audit.tree import MerkleTree
from events.chain import GENESIS_HASH
from events.store import EventStore
from kernel.clock import utcnow
from kernel.errors import Conflict
from kernel.sql import lock_writers

log = logging.getLogger(__name__)


class NoSigningKey(Conflict):
    """The server has no checkpoint key configured (HTTP 409: not in a state to sign)."""

    code = "no_checkpoint_key"


class InconsistentTree(Conflict):
    """The stored tree does not extend the last checkpoint: nothing is signed."""

    code = "inconsistent_tree"


class CheckpointSigner:
    def __init__(self, engine: Engine, store: EventStore, builder: TreeBuilder,
                 checkpoints: CheckpointStore, key: SigningKey | None,
                 before_signing: Callable[[], object] | None = None) -> None:
        self.engine, self.store, self.builder, self.checkpoints = engine, store, builder, checkpoints
        self.key, self.before_signing = key, before_signing

    def sign(self, only_if_grown: bool = False) -> StoredCheckpoint | None:
        """Sign the log as it is now; None when ``only_if_grown`` and nothing was added."""
        key = self.signing_key()
        if self.before_signing is not None:
            self.before_signing()
        self.builder.build()
        with self.engine.begin() as conn:
            lock_writers(conn, CHECKPOINT_LOCK_KEY)  # two signers take turns
            tree = MerkleTree(SqlNodeStore(self.engine, conn))
            size = tree.size()
            root, chain_head = tree.root(size), self._chain_head(conn, tree, size)
            previous = self.checkpoints.latest(conn)
            if previous is not None:
                _check_extends(tree, previous, size, root)
                if only_if_grown and previous.checkpoint.size == size:
                    return None
            signed = sign_checkpoint(Checkpoint(key.name, size, root, chain_head, utcnow()), key)
            return self.checkpoints.add_in(conn, signed, key.key_id)

    def run(self, stop: threading.Event, every: float,
            on_signed: Callable[[StoredCheckpoint], None] | None = None, rounds: int = 0) -> None:
        """Sign every ``every`` seconds while the log grows, until ``stop`` is set (or after
        ``rounds`` attempts, when given)."""
        done = 0
        while not stop.is_set():
            try:
                signed = self.sign(only_if_grown=True)
            except (Conflict, DBAPIError) as exc:
                log.error("checkpoint not signed: %s", exc)
                signed = None
            if signed is not None and on_signed is not None:
                on_signed(signed)
            done += 1
            if rounds and done >= rounds:
                return
            stop.wait(every)

    def signing_key(self) -> SigningKey:
        if self.key is None:
            raise NoSigningKey("no checkpoint signing key: set HCP_CHECKPOINT_KEY_FILE "
                               "(create one with `hcp audit keygen`)")
        return self.key

    def _chain_head(self, conn: Connection, tree: MerkleTree, size: int) -> str:
        if size == 0:
            return GENESIS_HASH
        [link] = self.store.chain_links(size - 1, 1, conn)
        [leaf] = SqlNodeStore(self.engine, conn).read_nodes([NodeId(0, size - 1)]).values()
        if link.position != size or leaf_hash(chain_leaf(link.hash)) != leaf:
            raise LogDoesNotExtendTree(f"the event at position {size} is not the one the tree holds: "
                                       "the log was rewritten after the tree was built")
        return link.hash


def _check_extends(tree: MerkleTree, previous: StoredCheckpoint, size: int, root: bytes) -> None:
    old = previous.checkpoint
    try:
        if old.size > size:
            raise ProofError(f"the tree has {size} leaves, fewer than the {old.size} signed before")
        verify_consistency(old.size, size, tree.consistency_proof(old.size, size), old.root, root)
    except ProofError as exc:
        raise InconsistentTree(f"refusing to sign: the tree does not extend checkpoint "
                               f"{previous.position} (size {old.size}): {exc}") from exc
