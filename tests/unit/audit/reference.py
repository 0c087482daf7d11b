"""A naive Merkle tree straight from the text of RFC 9162 section 2.1, for comparison.

Recursive, slow and obviously right: MTH (2.1.1), PATH (2.1.3.1) and PROOF/SUBPROOF
(2.1.4.1) over the list of leaf data, each line mirroring the RFC's definitions.
"""

import hashlib


def _hash(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _k(n: int) -> int:
    """The largest power of two smaller than n."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(d: list[bytes]) -> bytes:
    n = len(d)
    if n == 0:
        return _hash(b"")
    if n == 1:
        return _hash(b"\x00" + d[0])
    k = _k(n)
    return _hash(b"\x01" + mth(d[0:k]) + mth(d[k:n]))


def path(m: int, d: list[bytes]) -> list[bytes]:
    n = len(d)
    if n == 1:
        return []
    k = _k(n)
    if m < k:
        return path(m, d[0:k]) + [mth(d[k:n])]
    return path(m - k, d[k:n]) + [mth(d[0:k])]


def proof(m: int, d: list[bytes]) -> list[bytes]:
    return subproof(m, d, True)


def subproof(m: int, d: list[bytes], b: bool) -> list[bytes]:
    n = len(d)
    if m == n:
        return [] if b else [mth(d)]
    k = _k(n)
    if m <= k:
        return subproof(m, d[0:k], b) + [mth(d[k:n])]
    return subproof(m - k, d[k:n], False) + [mth(d[0:k])]
