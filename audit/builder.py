"""The Merkle tree builder: follows the log like the relay, one transaction per page.

A projection of the events' chain hashes: it reads (position, prev_hash, hash) after the
tree's size, checks that each event links to the one before (and the first to the
tree's last leaf), appends the hashes as leaves and commits the new nodes. Idempotent:
two builders never both extend the tree (the node store refuses a stale size), and
proofs cover what the builder has reached, as in every transparency log.

It runs in a child process of ``hcp relay`` (the active relay only; cli/tree_process.py),
in ``hcp audit tree --follow``, and on demand before every checkpoint is signed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from audit.merkle import NodeId, chain_leaf, leaf_hash
from audit.nodestore import StaleTreeError
from audit.sql_nodestore import SqlNodeStore
from audit.tree import MerkleTree
from events.chain import GENESIS_HASH
from events.store import ChainLink, EventStore
from kernel.errors import Conflict

log = logging.getLogger(__name__)

PAGE = 5000


class LogDoesNotExtendTree(Conflict):
    """The log no longer continues the tree: history was rewritten or events were deleted."""

    code = "log_rewritten"


class TreeBuilder:
    def __init__(self, engine: Engine, store: EventStore) -> None:
        self.engine, self.store = engine, store

    def size(self) -> int:
        return SqlNodeStore(self.engine).tree_size()

    def step(self, limit: int = PAGE) -> int:
        """Append up to ``limit`` events to the tree in one transaction; return how many."""
        with self.engine.begin() as conn:
            nodes = SqlNodeStore(self.engine, conn)
            size = nodes.tree_size()
            links = self.store.chain_links(size, limit, conn)
            if not links:
                return 0
            self._check_links(nodes, size, links)
            try:
                MerkleTree(nodes).append((chain_leaf(link.hash) for link in links), from_size=size)
            except StaleTreeError:
                return 0  # another builder got there first; the next step reads its size
        return len(links)

    def build(self, upto: int | None = None, page: int = PAGE,
              on_progress: Callable[[int], None] | None = None) -> int:
        """Catch up with the log (or until the tree has ``upto`` leaves); return the size."""
        goal = self.store.head() if upto is None else upto
        while (size := self.size()) < goal:
            # 0 appended: another builder got there first (go on from its size) or the
            # log has no more (stop).
            if self.step(min(page, goal - size)) == 0 and self.size() == size:
                break
            if on_progress is not None:
                on_progress(self.size())
        return self.size()

    def follow(self, stop: threading.Event, interval: float = 1.0) -> None:
        """Keep the tree at the log's head until ``stop`` is set; errors are logged, retried."""
        while not stop.is_set():
            try:
                added = self.step()
            except LogDoesNotExtendTree as exc:
                log.error("Merkle tree builder stopped: %s", exc)
                return
            except DBAPIError as exc:
                log.warning("Merkle tree builder step failed (%s); retrying", exc)
                added = 0
            if added < PAGE:
                stop.wait(interval)

    @staticmethod
    def _check_links(nodes: SqlNodeStore, size: int, links: Sequence[ChainLink]) -> None:
        prev_hash, expected = links[0].prev_hash, size + 1
        if size == 0 and prev_hash != GENESIS_HASH:
            raise LogDoesNotExtendTree("the first event does not start from the genesis hash")
        if size > 0:
            [last_leaf] = nodes.read_nodes([NodeId(0, size - 1)]).values()
            if leaf_hash(chain_leaf(prev_hash)) != last_leaf:
                raise LogDoesNotExtendTree(f"event {size + 1}'s prev_hash is not the hash the tree holds "
                                           f"for position {size}: history up to {size} was rewritten")
        for link in links:
            if link.position != expected or link.prev_hash != prev_hash:
                raise LogDoesNotExtendTree(f"the log breaks at position {expected} (a row is missing, "
                                           f"moved or rewritten); the tree stays at {size}")
            prev_hash, expected = link.hash, expected + 1
