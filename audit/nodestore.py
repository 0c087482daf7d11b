"""Where the Merkle tree lives: the hash of every complete subtree, keyed by (level, idx).

A complete subtree never changes once its last leaf is appended, so the store is
append-only like the log itself: appending a leaf writes the leaf's node and the nodes it
completes (two rows per leaf on average). Every tree size up to the current one is a
concatenation of complete subtrees (``merkle.range_nodes``), so its root and every proof
against it need only O(log n) reads and no rehashing of the log.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence

from audit.merkle import HASH_SIZE, NodeId

Node = tuple[NodeId, bytes]


class NodeStoreError(RuntimeError):
    """Base of the node store's errors."""


class MissingNodeError(NodeStoreError):
    """A node that a tree of the store's size must have is not there."""


class StaleTreeError(NodeStoreError):
    """Another writer appended first: the store is not at the size this append started from."""


class NodeStore(ABC):
    """The port: complete-subtree hashes of one log's Merkle tree.

    Adapters must make ``write_nodes`` all-or-nothing and refuse it when the stored tree
    size is not ``old_size`` (optimistic concurrency: two appenders never interleave).
    """

    @abstractmethod
    def tree_size(self) -> int:
        """Returns:
            How many leaves the stored tree has (the number of level-0 nodes).
        """

    @abstractmethod
    def read_nodes(self, ids: Collection[NodeId]) -> dict[NodeId, bytes]:
        """Args:
            ids: complete subtrees, all within the stored tree.

        Returns:
            Each id's 32-byte hash. Raises MissingNodeError if any is absent.
        """

    @abstractmethod
    def write_nodes(self, old_size: int, new_size: int, nodes: Sequence[Node]) -> None:
        """Store the nodes that appending leaves old_size..new_size-1 completes.

        Args:
            old_size: the tree size the caller read before computing ``nodes``.
            new_size: the tree size after this write.
            nodes: exactly the complete subtrees the new leaves finish, in any order.

        Raises StaleTreeError if the stored size is not ``old_size``.
        """


class MemoryNodeStore(NodeStore):
    """Nodes of each level packed in one bytearray: 32 bytes a node, about 64 bytes a leaf.

    Complete nodes of a level are finished left to right, so a level is a plain array and
    (level, idx) is an offset; a dict of 2M tuple keys would take ten times the memory.
    """

    def __init__(self) -> None:
        self._levels: list[bytearray] = []

    def tree_size(self) -> int:
        return len(self._levels[0]) // HASH_SIZE if self._levels else 0

    def read_nodes(self, ids: Collection[NodeId]) -> dict[NodeId, bytes]:
        return {node_id: self._read(node_id) for node_id in ids}

    def _read(self, node_id: NodeId) -> bytes:
        level, idx = node_id
        offset = idx * HASH_SIZE
        if idx < 0 or level >= len(self._levels) or offset + HASH_SIZE > len(self._levels[level]):
            raise MissingNodeError(f"no node at level {level}, idx {idx}")
        return bytes(self._levels[level][offset:offset + HASH_SIZE])

    def write_nodes(self, old_size: int, new_size: int, nodes: Sequence[Node]) -> None:
        if self.tree_size() != old_size:
            raise StaleTreeError(f"tree has size {self.tree_size()}, the append started from {old_size}")
        staged = self._staged(nodes)  # validate everything before changing anything
        leaves = sum(1 for level, _, _ in staged if level == 0)
        if leaves != new_size - old_size:
            raise NodeStoreError(f"{leaves} leaf nodes for sizes {old_size} to {new_size}")
        for level, _, value in staged:
            while level >= len(self._levels):
                self._levels.append(bytearray())
            self._levels[level] += value

    def _staged(self, nodes: Sequence[Node]) -> list[tuple[int, int, bytes]]:
        staged = sorted((level, idx, value) for (level, idx), value in nodes)
        expected: dict[int, int] = {}
        for level, idx, value in staged:
            if len(value) != HASH_SIZE:
                raise NodeStoreError(f"node ({level}, {idx}) is not a 32-byte hash")
            have = len(self._levels[level]) // HASH_SIZE if level < len(self._levels) else 0
            if idx != expected.get(level, have):
                raise NodeStoreError(f"node ({level}, {idx}) would leave a gap or overwrite a node")
            expected[level] = idx + 1
        return staged
