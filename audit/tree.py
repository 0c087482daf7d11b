"""Appending to the Merkle tree and proving against it, over any ``NodeStore``.

``CompactRange`` is the incremental appender: the roots of the complete subtrees of a
tree (one per set bit of its size) are all it needs to add leaves, to say which new
complete nodes each leaf finishes, and to give the root. ``MerkleTree`` reads those
peaks from the store, appends, writes the new nodes, and answers roots and proofs for
any size up to the stored one with one batched read of O(log n) nodes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

from audit.merkle import (
    LEAF_PREFIX,
    NODE_PREFIX,
    NodeId,
    Range,
    consistency_ranges,
    fold,
    inclusion_ranges,
    leaf_hash,
    node_hash,
    range_nodes,
)
from audit.nodestore import Node, NodeStore, StaleTreeError


class CompactRange:
    """A tree of ``size`` leaves held as its peaks, ``range_nodes(0, size)``, left to right."""

    def __init__(self, size: int = 0, peaks: Sequence[bytes] = ()) -> None:
        levels = [node.level for node in range_nodes(0, size)]
        if len(peaks) != len(levels):
            raise ValueError(f"a tree of size {size} has {len(levels)} peaks, got {len(peaks)}")
        self._size = size
        self._peaks = list(zip(levels, peaks, strict=True))

    @property
    def size(self) -> int:
        return self._size

    def append(self, data: bytes) -> list[Node]:
        """Add one leaf (its data, e.g. a chain hash); return the complete nodes it finishes."""
        index, level, value = self._size, 0, leaf_hash(data)
        finished = [(NodeId(0, index), value)]
        # Equal-level peaks are siblings: merging them is exactly what completes a subtree.
        while self._peaks and self._peaks[-1][0] == level:
            value = node_hash(self._peaks.pop()[1], value)
            level += 1
            finished.append((NodeId(level, index >> level), value))
        self._peaks.append((level, value))
        self._size += 1
        return finished

    def extend(self, leaves: Iterable[bytes]) -> list[Node]:
        """``append`` for each leaf in turn; the complete nodes they finish, in order.

        The same steps as ``append``, inlined: the tree builder runs this for every event
        of the log, and the calls and lists per leaf cost more than its two hashes."""
        sha256, peaks, index, finished = hashlib.sha256, self._peaks, self._size, []
        new_node = tuple.__new__  # NodeId(level, idx) without the NamedTuple's Python __new__
        for data in leaves:
            value, level = sha256(LEAF_PREFIX + data).digest(), 0
            finished.append((new_node(NodeId, (0, index)), value))
            while peaks and peaks[-1][0] == level:
                value = sha256(NODE_PREFIX + peaks.pop()[1] + value).digest()
                level += 1
                finished.append((new_node(NodeId, (level, index >> level)), value))
            peaks.append((level, value))
            index += 1
        self._size = index
        return finished

    def root(self) -> bytes:
        return fold([value for _, value in self._peaks])


class MerkleTree:
    """The log's Merkle tree, kept in a node store."""

    def __init__(self, store: NodeStore) -> None:
        self._store = store

    def size(self) -> int:
        return self._store.tree_size()

    def append(self, leaves: Iterable[bytes], from_size: int | None = None) -> int:
        """Append leaf data after the stored size; write the finished nodes; return the new size.

        ``from_size``: the size the caller chose ``leaves`` for (e.g. it read the log after
        that size). Give it whenever the leaves depend on the size: under READ COMMITTED a
        second read of the size may already see another appender's commit, and the leaves
        would land after theirs. The store refuses a write from a stale size either way.
        """
        old_size = self._store.tree_size()
        if from_size is not None and from_size != old_size:
            raise StaleTreeError(f"tree has size {old_size}, the leaves were chosen for {from_size}")
        compact = self.compact_range(old_size)
        nodes = compact.extend(leaves)
        if nodes:
            self._store.write_nodes(old_size, compact.size, nodes)
        return compact.size

    def compact_range(self, size: int | None = None) -> CompactRange:
        size = self._checked_size(size)
        peaks = range_nodes(0, size)
        found = self._store.read_nodes(peaks)
        return CompactRange(size, [found[node] for node in peaks])

    def root(self, size: int | None = None) -> bytes:
        """MTH of the first ``size`` leaves (default: all)."""
        return self._range_hashes([(0, self._checked_size(size))])[0]

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        """PATH(index, D[size]): the audit path of leaf ``index`` in the tree of ``size`` leaves."""
        return self._range_hashes(inclusion_ranges(index, self._checked_size(size)))

    def consistency_proof(self, size1: int, size2: int | None = None) -> list[bytes]:
        """PROOF(size1, D[size2]): that the tree of size1 leaves is a prefix of size2's."""
        return self._range_hashes(consistency_ranges(size1, self._checked_size(size2)))

    def _checked_size(self, size: int | None) -> int:
        stored = self._store.tree_size()
        if size is None:
            return stored
        if not 0 <= size <= stored:
            raise ValueError(f"tree size {size} is outside 0..{stored}, the size of the stored tree")
        return size

    def _range_hashes(self, ranges: Sequence[Range]) -> list[bytes]:
        return range_hashes(self._store, ranges)


def range_hashes(store: NodeStore, ranges: Sequence[Range]) -> list[bytes]:
    """The hash of each range (a proof's elements) from the store's complete subtrees.

    One read for the whole proof: a SQL store answers it with a single query. The caller
    vouches that the store holds every range (e.g. they lie within a signed checkpoint).
    """
    per_range = [range_nodes(start, end) for start, end in ranges]
    found = store.read_nodes({node for nodes in per_range for node in nodes})
    return [fold([found[node] for node in nodes]) for nodes in per_range]
