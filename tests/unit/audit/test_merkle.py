"""The efficient tree against the RFC's own definitions, for every size up to 64."""

import hashlib

import pytest

from audit.merkle import (
    EMPTY_ROOT,
    ProofError,
    chain_leaf,
    leaf_hash,
    range_nodes,
    root_from_inclusion_proof,
    verify_consistency,
    verify_inclusion,
)
from audit.nodestore import MemoryNodeStore
from audit.tree import MerkleTree
from tests.unit.audit import reference

MAX = 64
LEAVES = [hashlib.sha256(str(i).encode()).digest() for i in range(MAX)]  # like chain hashes


@pytest.fixture(scope="module")
def tree() -> MerkleTree:
    t = MerkleTree(MemoryNodeStore())
    t.append(LEAVES)
    return t


@pytest.fixture(scope="module")
def roots() -> list[bytes]:
    return [reference.mth(LEAVES[:n]) for n in range(MAX + 1)]


def test_roots_of_every_size_match_the_rfc(tree, roots):
    assert roots[0] == EMPTY_ROOT == hashlib.sha256(b"").digest()
    assert roots[1] == hashlib.sha256(b"\x00" + LEAVES[0]).digest()
    assert [tree.root(n) for n in range(MAX + 1)] == roots


def test_inclusion_proofs_match_the_rfc_and_verify(tree, roots):
    for n in range(1, MAX + 1):
        for m in range(n):
            proof = tree.inclusion_proof(m, n)
            assert proof == reference.path(m, LEAVES[:n]), (m, n)
            verify_inclusion(leaf_hash(LEAVES[m]), m, n, proof, roots[n])


def test_consistency_proofs_match_the_rfc_and_verify(tree, roots):
    for n in range(1, MAX + 1):
        for m in range(1, n):
            proof = tree.consistency_proof(m, n)
            assert proof == reference.proof(m, LEAVES[:n]), (m, n)
            verify_consistency(m, n, proof, roots[m], roots[n])


def _flipped(proof: list[bytes], i: int) -> list[bytes]:
    out = list(proof)
    out[i] = bytes([out[i][0] ^ 0x08]) + out[i][1:]
    return out


def _fails(check, *args) -> bool:
    try:
        check(*args)
    except ProofError:
        return True
    return False


def test_tampered_inclusion_proofs_fail(tree, roots):
    for n in range(1, 24):
        for m in range(n):
            leaf, proof = leaf_hash(LEAVES[m]), tree.inclusion_proof(m, n)
            for i in range(len(proof)):
                assert _fails(verify_inclusion, leaf, m, n, _flipped(proof, i), roots[n])
            for wrong in {m - 1, m + 1, m ^ 2} - {m}:
                assert _fails(verify_inclusion, leaf, wrong, n, proof, roots[n]), (m, wrong, n)
            for wrong in {n - 1, n + 1, 2 * n, n // 2} - {n}:
                if 0 <= wrong <= MAX:
                    assert _fails(verify_inclusion, leaf, m, wrong, proof, roots[wrong]), (m, n, wrong)
            assert _fails(verify_inclusion, leaf_hash(b"other"), m, n, proof, roots[n])
            assert _fails(verify_inclusion, leaf, m, n, [*proof, roots[n]], roots[n])
            if proof:
                assert _fails(verify_inclusion, leaf, m, n, proof[:-1], roots[n])


def test_tampered_consistency_proofs_fail(tree, roots):
    for n in range(2, 24):
        for m in range(1, n):
            proof = tree.consistency_proof(m, n)
            for i in range(len(proof)):
                assert _fails(verify_consistency, m, n, _flipped(proof, i), roots[m], roots[n])
            for wrong in {m - 1, m + 1, m ^ 2} - {m}:
                if 0 < wrong < n:
                    assert _fails(verify_consistency, wrong, n, proof, roots[wrong], roots[n]), (m, wrong, n)
            for wrong in {n - 1, n + 1, 2 * n} - {n}:
                if m < wrong <= MAX:
                    assert _fails(verify_consistency, m, wrong, proof, roots[m], roots[wrong]), (m, n, wrong)
            assert _fails(verify_consistency, m, n, proof, roots[n], roots[m])
            assert _fails(verify_consistency, m, n, [], roots[m], roots[n])
            assert _fails(verify_consistency, m, n, proof[:-1], roots[m], roots[n])
            assert _fails(verify_consistency, m, n, [*proof, roots[n]], roots[m], roots[n])
            assert _fails(verify_consistency, m, n, [proof[0], *proof], roots[m], roots[n])


def test_edge_sizes():
    root = leaf_hash(b"x")
    verify_inclusion(root, 0, 1, [], root)  # a one-leaf tree: the leaf is the root
    for index, size in [(0, 0), (1, 1), (5, 3), (-1, 3)]:
        assert _fails(verify_inclusion, root, index, size, [], root)
    verify_consistency(0, 5, [], EMPTY_ROOT, root)  # the empty tree is a prefix of all
    verify_consistency(3, 3, [], root, root)
    assert _fails(verify_consistency, 0, 5, [], root, root)  # but its root is fixed
    assert _fails(verify_consistency, 3, 3, [], root, EMPTY_ROOT)
    assert _fails(verify_consistency, 3, 3, [root], root, root)
    assert _fails(verify_consistency, 4, 3, [root], root, root)  # logs never shrink


def test_hashes_of_the_wrong_length_are_refused():
    leaf = leaf_hash(b"x")
    with pytest.raises(ProofError, match="proof\\[0\\]"):
        root_from_inclusion_proof(leaf, 0, 2, [b"short"])
    with pytest.raises(ProofError, match="root"):
        verify_inclusion(leaf, 0, 1, [], leaf[:31])


def test_range_nodes_decompose_into_aligned_complete_subtrees():
    assert range_nodes(0, 0) == []
    assert range_nodes(0, 13) == [(3, 0), (2, 2), (0, 12)]
    assert range_nodes(8, 13) == [(2, 2), (0, 12)]
    assert range_nodes(4, 8) == [(2, 1)]


def test_chain_leaf_is_the_hash_bytes():
    assert chain_leaf("ab" * 32) == b"\xab" * 32
    for bad in ["ab" * 31, "AB" * 32, "zz" * 32]:
        with pytest.raises(ValueError):
            chain_leaf(bad)
