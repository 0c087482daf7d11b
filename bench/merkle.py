"""Merkle proof benchmark: proof generation and verification over a log of N leaves held
in the in-memory node store, against floors measured in the same run.

    .venv/bin/python bench/merkle.py [--leaves 1000000] [--samples 2000]

No services. It appends N random 32-byte leaves (as the tree builder would, in batches)
and prints:

* append: leaves/s, and the store's size (bytes of node hashes and the process's RSS
  growth);
* inclusion proofs at the full size and at a random earlier size, consistency proofs
  between random sizes: p50 / p95 / p99 / max per proof, the goal being p95 < 10 ms;
* floors: reading the same nodes from the store with no planning (generation), and
  one bare SHA-256 per proof node (verification); and the ratio of each to its floor.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import time
from collections.abc import Callable

from audit.merkle import (
    NodeId,
    Range,
    consistency_ranges,
    inclusion_ranges,
    leaf_hash,
    range_nodes,
    verify_consistency,
    verify_inclusion,
)
from audit.nodestore import MemoryNodeStore
from audit.tree import MerkleTree

GOAL_P95_MS = 10.0


def main() -> None:
    args = parse_args()
    rng = random.Random(args.seed)
    leaves = [rng.randbytes(32) for _ in range(args.leaves)]
    store = MemoryNodeStore()
    tree = MerkleTree(store)
    rss0 = rss_bytes()
    started = time.perf_counter()
    for start in range(0, len(leaves), args.batch):
        tree.append(leaves[start:start + args.batch])
    took = time.perf_counter() - started
    stored = sum(len(level) for level in store._levels)  # a benchmark may peek
    print(f"log:          {args.leaves:,} leaves, appended in batches of {args.batch}")
    print(f"append:       {args.leaves / took:,.0f} leaves/s ({took:.1f} s)")
    grown = (rss_bytes() - rss0) / 2**20
    print(f"memory:       {stored / 2**20:.1f} MiB of node hashes, RSS +{grown:.1f} MiB")
    n = args.leaves
    cases = [(rng.randrange(n), n) for _ in range(args.samples)]
    bench_inclusion("inclusion @N", tree, store, leaves, cases)
    older = [(rng.randrange(size), size) for size in (rng.randrange(1, n + 1) for _ in range(args.samples))]
    bench_inclusion("inclusion @m", tree, store, leaves, older)
    pairs = [random_pair(rng, n) for _ in range(args.samples)]
    bench_consistency(tree, store, pairs)


def bench_inclusion(label: str, tree: MerkleTree, store: MemoryNodeStore, leaves: list[bytes],
                    cases: list[tuple[int, int]]) -> None:
    roots = {size: tree.root(size) for _, size in cases}
    proofs = {}

    def generate(case: tuple[int, int]) -> None:
        proofs[case] = tree.inclusion_proof(*case)

    def verify(case: tuple[int, int]) -> None:
        index, size = case
        verify_inclusion(leaf_hash(leaves[index]), index, size, proofs[case], roots[size])

    gen = timed(generate, cases)
    planned = {case: planned_nodes(inclusion_ranges(*case)) for case in cases}
    floor_gen = timed(lambda case: store.read_nodes(planned[case]), cases)
    ver = timed(verify, cases)
    floor_ver = timed(lambda case: hash_floor(proofs[case]), cases)
    report(label, gen, floor_gen, ver, floor_ver, statistics.mean(len(p) for p in proofs.values()))


def bench_consistency(tree: MerkleTree, store: MemoryNodeStore, pairs: list[tuple[int, int]]) -> None:
    roots = {size: tree.root(size) for pair in pairs for size in pair}
    proofs = {}

    def generate(pair: tuple[int, int]) -> None:
        proofs[pair] = tree.consistency_proof(*pair)

    def verify(pair: tuple[int, int]) -> None:
        verify_consistency(pair[0], pair[1], proofs[pair], roots[pair[0]], roots[pair[1]])

    gen = timed(generate, pairs)
    ver = timed(verify, pairs)
    floor_ver = timed(lambda pair: hash_floor(proofs[pair]), pairs)
    planned = {pair: planned_nodes(consistency_ranges(*pair)) for pair in pairs}
    floor_gen = timed(lambda pair: store.read_nodes(planned[pair]), pairs)
    report("consistency", gen, floor_gen, ver, floor_ver, statistics.mean(len(p) for p in proofs.values()))


def random_pair(rng: random.Random, n: int) -> tuple[int, int]:
    size1, size2 = sorted(rng.sample(range(1, n + 1), 2))
    return size1, size2


def planned_nodes(ranges: list[Range]) -> list[NodeId]:
    """The nodes a proof reads, worked out beforehand: reading them alone is the generation floor."""
    return [node for start, end in ranges for node in range_nodes(start, end)]


def hash_floor(proof: list[bytes]) -> None:
    """One SHA-256 of a 65-byte node per proof element: verification's unavoidable work."""
    for node in proof:
        hashlib.sha256(b"\x01" + node + node).digest()


def timed(fn: Callable[[tuple[int, int]], object], cases: list[tuple[int, int]]) -> list[float]:
    out = []
    for case in cases:
        t0 = time.perf_counter_ns()
        fn(case)
        out.append((time.perf_counter_ns() - t0) / 1e6)
    return out


def report(label: str, gen: list[float], floor_gen: list[float], ver: list[float], floor_ver: list[float],
           nodes: float) -> None:
    g, v = percentiles(gen), percentiles(ver)
    verdict = "ok" if g[1] < GOAL_P95_MS else "OVER GOAL"
    print(f"{label:13} {nodes:.1f} nodes a proof")
    print(f"  generate:   p50 {g[0]:.3f}  p95 {g[1]:.3f}  p99 {g[2]:.3f}  max {g[3]:.3f} ms "
          f"({verdict}: p95 < {GOAL_P95_MS:g} ms); floor p95 {percentiles(floor_gen)[1]:.3f} ms, "
          f"ratio {g[1] / percentiles(floor_gen)[1]:.1f}")
    print(f"  verify:     p50 {v[0]:.3f}  p95 {v[1]:.3f}  p99 {v[2]:.3f}  max {v[3]:.3f} ms; "
          f"floor p95 {percentiles(floor_ver)[1]:.3f} ms, ratio {v[1] / percentiles(floor_ver)[1]:.1f}")


def percentiles(values: list[float]) -> tuple[float, float, float, float]:
    cuts = statistics.quantiles(values, n=100)
    return cuts[49], cuts[94], cuts[98], max(values)


def rss_bytes() -> int:
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--leaves", type=int, default=1_000_000)
    p.add_argument("--samples", type=int, default=2000)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--seed", type=int, default=9162)
    return p.parse_args()


if __name__ == "__main__":
    main()
