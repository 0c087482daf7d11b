"""The log and the reward chain since a signed checkpoint (``hcp audit all --since-checkpoint``).

Trust starts at the checkpoint: its signature, then the stored tree's peaks at its size,
which must fold to the root it signed (so they are the tree it signed, whatever the node
table holds). From there only what came after is re-hashed: each later event from its
stored bytes, chained to the signed chain head, its leaf added to those peaks; the root
that gives is the one the server's RFC 9162 consistency proof (read from its node table)
must lead to from the signed root, and the one every later stored checkpoint must have
signed. Older events are sampled: each re-hashed and proven in the checkpoint by an
inclusion proof. The reward chain is walked from the last seal the checkpoint covers
(the signer seals it in the transaction that signs), older rewards sampled with the
rewards on either side.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from audit.checkpoint_store import StoredCheckpoint
from audit.checkpoints import Checkpoint, CheckpointError, open_checkpoint
from audit.checks import log, rewards
from audit.keys import VerifierKey
from audit.merkle import ProofError, chain_leaf, verify_consistency
from audit.nodestore import NodeStore, NodeStoreError
from audit.report import Findings
from audit.tree import CompactRange, MerkleTree
from evaluators.chain import GENESIS_HASH, verify_rewards
from evaluators.model import RewardRecord
from evaluators.rewards import RewardQuery, RewardStore
from events.chain import verify_chain
from events.model import RecordedEvent
from events.projections.window import Window
from events.store import EventStore

PAGE = 5000


@dataclass(frozen=True)
class Base:
    """The checkpoint an incremental audit starts from, as signed, and where it came from."""

    checkpoint: Checkpoint
    note: str
    source: str  # "checkpoint 7" (stored), "kept.json" (an auditor's own copy)

    @property
    def size(self) -> int:
        return self.checkpoint.size

    def label(self) -> str:
        return f"{self.source} (size {self.size})"


def check_base(f: Findings, base: Base, verifier: VerifierKey) -> bool:
    """The checkpoint's signature with the pinned (or the server's) key."""
    f.checked += 1
    try:
        opened = open_checkpoint(base.note, verifier)
    except CheckpointError as exc:
        f.add(base.label(), f"the signed note does not verify with {verifier.vkey()}: {exc}")
        return False
    if opened.checkpoint != base.checkpoint:
        f.add(base.label(), "its columns differ from what its signed note says")
        return False
    return True


def check_log_since(f: Findings, store: EventStore, nodes: NodeStore, base: Base,
                    later: Sequence[StoredCheckpoint], verifier: VerifierKey) -> None:
    """The events after the checkpoint re-hashed and proven an extension of it, and the
    stored checkpoints signed after it held to the same recomputed roots."""
    n, head = base.size, store.head()
    if head < n:
        f.add(base.label(), f"TRUNCATED: the log has {head} events, but this checkpoint signed {n}: "
                            f"positions {head + 1}..{n} are gone")
        return
    tree = MerkleTree(nodes)
    tree_size = tree.size()
    compact = _signed_peaks(f, tree, base, tree_size)
    if compact is None:
        return
    last = store.chain_links(n - 1, 1) if n else []
    if n and (not last or last[0].hash != base.checkpoint.chain_head):
        f.add(f"event {n}", f"its hash is not the chain head {base.label()} signed: the event was rewritten")
    sizes = {min(tree_size, head)} | {c.checkpoint.size for c in later if n < c.checkpoint.size <= head}
    roots: dict[int, tuple[bytes, str]] = {}
    chained = verify_chain(_extending(store, n, compact, sizes, roots), base.checkpoint.chain_head, n + 1)
    f.checked += chained.checked
    if chained.first_break is not None:
        f.add(f"event {chained.first_break.position}", chained.first_break.reason)
        return
    size = min(tree_size, head)
    if size > n:
        _consistency(f, tree, base, size, roots[size][0])
    if tree_size < head:
        f.note(f"the stored tree has {tree_size} of {head} events: events {tree_size + 1}..{head} were "
               "re-hashed and chained but are not in a tree yet (`hcp audit tree`)")
    log.check_checkpoints(f, later, verifier, head)
    for cp in later:
        root = roots.get(cp.checkpoint.size)
        if root is not None and root != (cp.checkpoint.root, cp.checkpoint.chain_head):
            f.add(f"checkpoint {cp.position} (size {cp.checkpoint.size})",
                  f"REWRITTEN: it signed a root other than the one the events after {base.label()} give")


def _signed_peaks(f: Findings, tree: MerkleTree, base: Base, tree_size: int) -> CompactRange | None:
    """The stored tree's peaks at the checkpoint's size, if they fold to the signed root."""
    if tree_size < base.size:
        f.add("merkle tree", f"the stored tree has {tree_size} leaves, fewer than the {base.size} "
                             f"{base.label()} signed: run the full audit")
        return None
    try:
        compact = tree.compact_range(base.size)
    except (NodeStoreError, KeyError) as exc:
        f.add("merkle tree", f"the stored tree lacks nodes {base.label()} signed: {exc}")
        return None
    if compact.root() != base.checkpoint.root:
        f.add(base.label(), "the stored tree's first leaves no longer have the root it signed: the tree "
                            "or the log before it was rewritten (the full audit names the events)")
        return None
    return compact


def _extending(store: EventStore, after: int, compact: CompactRange, sizes: set[int],
               roots: dict[int, tuple[bytes, str]]) -> Iterator[RecordedEvent]:
    """The events after ``after`` as stored, each leaf added to ``compact`` as it passes;
    the root and chain head at each of ``sizes`` noted."""
    for event in store.iter_all(after, PAGE, raw=True):
        try:
            compact.append(chain_leaf(event.hash))
        except ValueError:
            yield event  # a garbled hash: the chain check names it and stops
            return
        if compact.size in sizes:
            roots[compact.size] = (compact.root(), event.hash)
        yield event


def _consistency(f: Findings, tree: MerkleTree, base: Base, size: int, root: bytes) -> None:
    """The server's consistency proof (its node table's) from the signed root to the root
    the re-hashed events give."""
    try:
        proof = tree.consistency_proof(base.size, size)
        verify_consistency(base.size, size, proof, base.checkpoint.root, root)
    except (ProofError, NodeStoreError, KeyError) as exc:
        f.add(base.label(), f"the log of {size} events is not proven an extension of it: {exc}")
        return
    f.checked += 1


def check_sampled_events(f: Findings, store: EventStore, nodes: NodeStore, base: Base,
                         window: Window) -> list[int]:
    """A seeded sample of the events the checkpoint covers, each re-hashed and proven in it."""
    positions = window.pick_positions("events", base.size)
    found = store.at_positions(positions)
    for position in sorted(set(positions) - set(found)):
        f.add(f"event {position}", "the checkpoint covers this position, but no event is stored there")
    events = [found[p] for p in sorted(found)]
    log.check_events(f, events)
    stored = StoredCheckpoint(0, base.checkpoint, base.note, "")
    log.check_inclusion(f, events, stored, nodes, base.source)
    return positions


def check_rewards_since(f: Findings, store: RewardStore, seals: Sequence[RecordedEvent], base: Base,
                        window: Window, logged: dict[tuple[str, int], str]) -> tuple[int, list[int]]:
    """The reward chain from the last seal the checkpoint covers (every later reward
    re-hashed and linked), each seal held to the chain, a seeded sample of the older
    rewards with their neighbours. Returns (where the walk started, the sampled positions)."""
    covered = [s for s in seals if s.position <= base.size]
    start, start_hash = 0, GENESIS_HASH
    if covered:
        start, start_hash = int(covered[-1].payload["to_position"]), str(covered[-1].payload["head_hash"])
    else:
        f.note(f"no reward.sealed event before {base.label()}: the whole reward chain was walked")

    def pages() -> Iterator[RewardRecord]:
        after = start
        while page := store.find(RewardQuery(after=after, limit=PAGE)):
            rewards.check_contract_hashes(f, page, logged)
            yield from page
            after = page[-1].position or after

    checked, breaks = verify_rewards(pages(), start + 1, start_hash)
    f.checked += checked
    for brk in breaks:
        f.add(f"reward position {brk.position}" if brk.reward_id is None
              else f"reward {brk.reward_id} (position {brk.position})", brk.reason)
    sampled = window.pick_positions("reward_records", start)
    around = {p + d for p in sampled for d in (-1, 0, 1) if p + d > 0}
    at = store.at_positions(around | {int(s.payload["to_position"]) for s in seals})
    used = [at[p] for p in sampled if p in at]
    rewards.check_used(f, used, at, [str(r.reward_id) for r in used])
    for position in sorted(set(sampled) - set(at)):
        f.add(f"reward position {position}", "the chain before the seal reaches it, but no reward is stored")
    rewards.check_seals(f, [s for s in seals if s.position > base.size] + covered[-1:], at)
    return start, sampled
