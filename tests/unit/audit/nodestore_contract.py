"""The shared test suite of the NodeStore port: subclass it once per adapter.

The SQL adapter's test (integration, on SQLite and PostgreSQL) subclasses
``NodeStoreContract`` and provides ``make_store``, as the in-memory one does here.
"""

import hashlib

import pytest

from audit.merkle import NodeId
from audit.nodestore import MissingNodeError, NodeStore, NodeStoreError, StaleTreeError
from audit.tree import MerkleTree
from tests.unit.audit import reference


def leaves(n: int, salt: str = "") -> list[bytes]:
    return [hashlib.sha256(f"{salt}{i}".encode()).digest() for i in range(n)]


class NodeStoreContract:
    def make_store(self) -> NodeStore:
        raise NotImplementedError

    def test_an_empty_store_has_size_zero(self):
        store = self.make_store()
        assert store.tree_size() == 0
        with pytest.raises(MissingNodeError):
            store.read_nodes([NodeId(0, 0)])

    def test_appends_in_any_batches_give_the_rfc_tree(self):
        data = leaves(37)
        for batches in ([37], [1] * 37, [5, 11, 1, 20], [16, 16, 5]):
            store, start = self.make_store(), 0
            tree = MerkleTree(store)
            for size in batches:
                assert tree.append(data[start:start + size]) == start + size
                start += size
            assert store.tree_size() == 37
            assert tree.root() == reference.mth(data)
            assert tree.root(20) == reference.mth(data[:20])  # earlier sizes stay provable
            assert tree.inclusion_proof(19, 20) == reference.path(19, data[:20])
            assert tree.consistency_proof(20, 37) == reference.proof(20, data)

    def test_it_stores_every_complete_subtree_and_nothing_else(self):
        store = self.make_store()
        MerkleTree(store).append(leaves(6))
        complete = [NodeId(0, i) for i in range(6)] + [NodeId(1, i) for i in range(3)] + [NodeId(2, 0)]
        assert len(store.read_nodes(complete)) == 10
        for absent in (NodeId(0, 6), NodeId(1, 3), NodeId(2, 1), NodeId(3, 0)):
            with pytest.raises(MissingNodeError):
                store.read_nodes([absent])

    def test_a_write_from_a_stale_size_is_refused_whole(self):
        store = self.make_store()
        tree = MerkleTree(store)
        tree.append(leaves(3))
        nodes = tree.compact_range(3).append(b"x" * 32)
        tree.append(leaves(1, "other"))  # another appender got there first
        with pytest.raises(StaleTreeError):
            store.write_nodes(3, 4, nodes)
        assert store.tree_size() == 4 and tree.root() == reference.mth([*leaves(3), *leaves(1, "other")])

    def test_a_write_that_would_leave_a_gap_changes_nothing(self):
        store = self.make_store()
        MerkleTree(store).append(leaves(2))
        with pytest.raises(NodeStoreError):
            store.write_nodes(2, 3, [(NodeId(0, 3), b"\0" * 32)])
        with pytest.raises(NodeStoreError):
            store.write_nodes(2, 3, [(NodeId(0, 2), b"\0" * 32), (NodeId(1, 2), b"\0" * 32)])
        assert store.tree_size() == 2
        with pytest.raises(MissingNodeError):
            store.read_nodes([NodeId(1, 2)])

    def test_a_repeat_or_a_short_hash_changes_nothing(self):
        store = self.make_store()
        MerkleTree(store).append(leaves(2))
        h = b"\0" * 32
        completing = [(NodeId(0, 2), h), (NodeId(0, 3), h), (NodeId(1, 1), h), (NodeId(2, 0), h)]
        for wrong in ([completing[0], *completing[:3]],  # as many nodes, one of them twice
                      [*completing[:3], (NodeId(2, 0), h[:31])]):
            with pytest.raises(NodeStoreError):
                store.write_nodes(2, 4, wrong)
        assert store.tree_size() == 2
        store.write_nodes(2, 4, completing)
        assert store.tree_size() == 4
