"""The Merkle tree over the log, in the RFC 9162 (Certificate Transparency v2) shape.

Pure functions: hashing (section 2.1.1), the geometry of roots and proofs, and the
verification algorithms of sections 2.1.3.2 and 2.1.4.2, step by step as the RFC writes
them. The leaves are the events' chain hashes (32 raw bytes each) in position order, so
leaf index = position - 1.

Proof *generation* is split in two so that storage stays out of this module: the
``*_ranges`` functions say which subtrees a proof is made of (each a leaf range
``[start, end)``), ``range_nodes`` says which complete subtrees (level, index) make up
such a range, and ``fold`` turns their hashes into the range's hash. ``audit.tree``
reads those complete-subtree hashes from a node store: O(log n) reads, no rehashing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import NamedTuple

HASH_SIZE = 32
LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"
EMPTY_ROOT = hashlib.sha256(b"").digest()  # MTH({}) = HASH()


class ProofError(ValueError):
    """A proof, root or size that does not verify. The message says which check failed."""


class NodeId(NamedTuple):
    """A complete subtree: the idx-th (from 0) run of 2**level leaves, leaves idx * 2**level on."""

    level: int
    idx: int  # not "index": that is tuple.index, and a reserved word in SQL


Range = tuple[int, int]  # leaves [start, end) of one subtree the RFC recursion visits


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(LEAF_PREFIX + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


def chain_leaf(chain_hash: str) -> bytes:
    """The leaf data of one event: its 64-hex-character chain hash as 32 bytes."""
    if len(chain_hash) != 2 * HASH_SIZE or chain_hash != chain_hash.lower():
        raise ValueError(f"a chain hash is 64 lowercase hex characters, got {chain_hash!r}")
    return bytes.fromhex(chain_hash)


def split_point(n: int) -> int:
    """k, the largest power of two smaller than n (n > 1): where the RFC splits D[n]."""
    return 1 << ((n - 1).bit_length() - 1)


# ----------------------------------------------------------------- geometry


def range_nodes(start: int, end: int) -> list[NodeId]:
    """The complete subtrees, left to right, whose fold is MTH(D[start:end]).

    Valid for every range the RFC recursion visits: those start on a multiple of a power
    of two at least as large as the range, so greedy aligned blocks give the RFC's splits
    (k first, then the remainder's k, ...). A tree of any size m is ``range_nodes(0, m)``,
    which is why complete nodes stored once serve every later and earlier tree size.
    """
    nodes = []
    while start < end:
        size = start & -start if start else 1 << ((end - start).bit_length() - 1)
        while start + size > end:
            size >>= 1
        level = size.bit_length() - 1
        nodes.append(NodeId(level, start >> level))
        start += size
    return nodes


def fold(hashes: Sequence[bytes]) -> bytes:
    """MTH of a range from its complete subtrees: the right edge hashes innermost first."""
    if not hashes:
        return EMPTY_ROOT
    acc = hashes[-1]
    for left in reversed(hashes[:-1]):
        acc = node_hash(left, acc)
    return acc


def inclusion_ranges(index: int, size: int) -> list[Range]:
    """PATH(index, D[size]) (RFC 9162 2.1.3.1) as subtree ranges, in proof order."""
    if not 0 <= index < size:
        raise ValueError(f"leaf index {index} is outside a tree of size {size}")
    siblings: list[Range] = []
    lo, hi = 0, size
    while hi - lo > 1:
        k = split_point(hi - lo)
        if index < lo + k:  # PATH(m, D[0:k]) : MTH(D[k:n])
            siblings.append((lo + k, hi))
            hi = lo + k
        else:  # PATH(m - k, D[k:n]) : MTH(D[0:k])
            siblings.append((lo, lo + k))
            lo += k
    return siblings[::-1]  # the recursion emits the deepest sibling first


def consistency_ranges(size1: int, size2: int) -> list[Range]:
    """PROOF(size1, D[size2]) (RFC 9162 2.1.4.1) as subtree ranges, in proof order.

    Empty when size1 is 0 or equals size2: those trees are consistent by definition.
    """
    if not 0 <= size1 <= size2:
        raise ValueError(f"no consistency proof from size {size1} to size {size2}")
    if size1 in (0, size2):
        return []
    out: list[Range] = []
    lo, hi, whole = 0, size2, True  # SUBPROOF(m, D[lo:hi], b)
    while hi != size1:  # lo < size1 <= hi holds throughout
        k = split_point(hi - lo)
        if size1 <= lo + k:  # SUBPROOF(m, D[0:k], b) : MTH(D[k:n])
            out.append((lo + k, hi))
            hi = lo + k
        else:  # SUBPROOF(m - k, D[k:n], false) : MTH(D[0:k])
            out.append((lo, lo + k))
            lo, whole = lo + k, False
    if not whole:  # SUBPROOF(m, D[m], false) = {MTH(D[m])}
        out.append((lo, hi))
    return out[::-1]


# ----------------------------------------------------------------- verification


def _check_hash(name: str, value: bytes) -> None:
    if len(value) != HASH_SIZE:
        raise ProofError(f"{name} is {len(value)} bytes, a SHA-256 hash is {HASH_SIZE}")


def _shift_until_odd_or_zero(fn: int, sn: int) -> tuple[int, int]:
    while not fn & 1 and fn != 0:
        fn, sn = fn >> 1, sn >> 1
    return fn, sn


def root_from_inclusion_proof(leaf: bytes, index: int, size: int, proof: Sequence[bytes]) -> bytes:
    """RFC 9162 2.1.3.2 steps 1-4: the root that ``proof`` implies for ``leaf`` (a leaf hash)."""
    _check_hash("leaf hash", leaf)
    for i, p in enumerate(proof):
        _check_hash(f"proof[{i}]", p)
    if not 0 <= index < size:
        raise ProofError(f"leaf index {index} is not below tree size {size}")
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            raise ProofError("inclusion proof is longer than the tree is deep")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                fn, sn = _shift_until_odd_or_zero(fn, sn)
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError("inclusion proof is shorter than the path to the root")
    return r


def verify_inclusion(leaf: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes) -> None:
    """RFC 9162 2.1.3.2: raise ProofError unless ``leaf`` is at ``index`` in the tree ``root``."""
    _check_hash("root", root)
    if root_from_inclusion_proof(leaf, index, size, proof) != root:
        raise ProofError(f"inclusion proof for leaf {index} does not lead to the root of size {size}")


def verify_consistency(size1: int, size2: int, proof: Sequence[bytes], root1: bytes, root2: bytes) -> None:
    """RFC 9162 2.1.4.2: raise ProofError unless tree ``root1`` is a prefix of tree ``root2``.

    The RFC defines proofs for 0 < size1 < size2; the edges are decided as transparency
    logs do: equal sizes need equal roots and an empty proof, and the empty tree (whose
    root must be MTH({})) is a prefix of every tree, with an empty proof.
    """
    _check_hash("first root", root1)
    _check_hash("second root", root2)
    for i, c in enumerate(proof):
        _check_hash(f"proof[{i}]", c)
    if not 0 <= size1 <= size2:
        raise ProofError(f"tree size went from {size1} to {size2}: a log only grows")
    if size1 in (0, size2):
        _verify_trivial_consistency(size1, size2, proof, root1, root2)
        return
    fr, sr, sn = _consistency_roots(size1, size2, list(proof), root1)
    if sn != 0:
        raise ProofError("consistency proof is shorter than the path to the root")
    if fr != root1:
        raise ProofError(f"consistency proof does not lead to the root of size {size1}")
    if sr != root2:
        raise ProofError(f"consistency proof does not lead to the root of size {size2}")


def _verify_trivial_consistency(size1: int, size2: int, proof: Sequence[bytes],
                                root1: bytes, root2: bytes) -> None:
    if proof:
        raise ProofError(f"a consistency proof from size {size1} to {size2} must be empty")
    if size1 == 0 and root1 != EMPTY_ROOT:
        raise ProofError("the root of the empty tree must be SHA-256 of the empty string")
    if size1 == size2 and root1 != root2:
        raise ProofError(f"two different roots for the same tree size {size1}")


def _consistency_roots(size1: int, size2: int, path: list[bytes], root1: bytes) -> tuple[bytes, bytes, int]:
    """RFC 9162 2.1.4.2 steps 1-6: the two roots the proof implies, and the final sn."""
    if not path:
        raise ProofError("consistency proof is empty")
    if size1 & (size1 - 1) == 0:  # size1 is an exact power of 2
        path.insert(0, root1)
    fn, sn = size1 - 1, size2 - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofError("consistency proof is longer than the tree is deep")
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            if not fn & 1:
                fn, sn = _shift_until_odd_or_zero(fn, sn)
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return fr, sr, sn
