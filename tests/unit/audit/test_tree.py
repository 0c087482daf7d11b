import pytest

from audit.merkle import EMPTY_ROOT
from audit.nodestore import MemoryNodeStore, NodeStore
from audit.tree import CompactRange, MerkleTree
from tests.unit.audit import reference
from tests.unit.audit.nodestore_contract import NodeStoreContract, leaves


class TestMemoryNodeStore(NodeStoreContract):
    def make_store(self) -> NodeStore:
        return MemoryNodeStore()


def test_compact_range_says_which_nodes_each_leaf_completes():
    compact = CompactRange()
    assert compact.root() == EMPTY_ROOT
    finished = [[node for node, _ in compact.append(leaf)] for leaf in leaves(4)]
    assert finished == [[(0, 0)], [(0, 1), (1, 0)], [(0, 2)], [(0, 3), (1, 1), (2, 0)]]
    assert compact.root() == reference.mth(leaves(4))


def test_compact_range_resumes_from_stored_peaks():
    tree = MerkleTree(MemoryNodeStore())
    tree.append(leaves(11))
    compact = tree.compact_range(11)
    compact.append(b"\1" * 32)
    assert compact.root() == reference.mth([*leaves(11), b"\1" * 32])
    with pytest.raises(ValueError, match="peaks"):
        CompactRange(11, [EMPTY_ROOT])


def test_sizes_beyond_the_stored_tree_are_refused():
    tree = MerkleTree(MemoryNodeStore())
    tree.append(leaves(5))
    with pytest.raises(ValueError, match="outside"):
        tree.root(6)
    with pytest.raises(ValueError):
        tree.inclusion_proof(5, 5)
    with pytest.raises(ValueError):
        tree.consistency_proof(3, 2)
    assert tree.consistency_proof(0, 5) == [] and tree.consistency_proof(5) == []


def test_appending_nothing_writes_nothing():
    tree = MerkleTree(MemoryNodeStore())
    assert tree.append([]) == 0 and tree.root() == EMPTY_ROOT


def test_leaves_chosen_for_a_size_the_tree_has_left_are_refused():
    from audit.nodestore import StaleTreeError

    store = MemoryNodeStore()
    tree = MerkleTree(store)
    tree.append(leaves(3))
    tree.append(leaves(2, "other"))  # another appender, between the caller's read and its append
    with pytest.raises(StaleTreeError):
        tree.append(leaves(2, "late"), from_size=3)
    assert tree.size() == 5 and tree.append(leaves(1, "next"), from_size=5) == 6
