"""The log itself: events re-hashed, proven in the signed checkpoint, and the checkpoints.

* an event is re-hashed from its stored bytes (payload digest, chain hash from its
  prev_hash), then proven in the latest signed checkpoint by an RFC 9162 inclusion
  proof. Proofs of many events share their upper nodes, so all of them are read at once.
* a stored checkpoint must verify with the log's public key, and say what its columns say.
* ``audit all`` also replays the whole chain and compares every checkpoint (and the
  stored tree) with roots recomputed from the events: ``audit.verify.check_log``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from audit.checkpoint_store import StoredCheckpoint
from audit.checkpoints import CheckpointError, open_checkpoint
from audit.keys import VerifierKey
from audit.merkle import (
    NodeId,
    ProofError,
    chain_leaf,
    fold,
    inclusion_ranges,
    leaf_hash,
    range_nodes,
    root_from_inclusion_proof,
)
from audit.nodestore import NodeStore, NodeStoreError
from audit.report import Findings
from audit.verify import LogCheck
from events.chain import chain_hash, payload_digest
from events.model import RecordedEvent


def check_events(findings: Findings, events: Iterable[RecordedEvent]) -> None:
    """Each event (as stored, not upcast) against its own digest and chain hash."""
    for event in events:
        findings.checked += 1
        if payload_digest(event.payload) != event.payload_digest:
            findings.add(f"event {event.position}", f"{event.type}: the payload does not match its digest "
                                                    "(payload altered)")
        elif chain_hash(event.prev_hash, event) != event.hash:
            findings.add(f"event {event.position}", f"{event.type}: the hash does not match the event's "
                                                    "fields (metadata altered)")


def check_inclusion(findings: Findings, events: Sequence[RecordedEvent], checkpoint: StoredCheckpoint,
                    nodes: NodeStore, label: str | None = None) -> None:
    """Prove each event (``position <= checkpoint size``) in the signed tree, in one read
    (``label``: how to name the checkpoint; default "checkpoint N")."""
    size, root = checkpoint.checkpoint.size, checkpoint.checkpoint.root
    label = label or f"checkpoint {checkpoint.position}"
    covered = [e for e in events if e.position <= size]
    if len(covered) < len(events):
        findings.note(f"{len(events) - len(covered)} events are newer than {label} "
                      f"(size {size}): not provable until the next one is signed")
    plans = {e.position: [range_nodes(a, b) for a, b in inclusion_ranges(e.position - 1, size)]
             for e in covered}
    try:
        found = nodes.read_nodes({node for plan in plans.values() for part in plan for node in part})
    except NodeStoreError as exc:
        findings.add(label, f"the stored tree lacks nodes it signed: {exc}")
        return
    for event in covered:
        proof = [fold([found[node] for node in part]) for part in plans[event.position]]
        try:
            implied = root_from_inclusion_proof(leaf_hash(chain_leaf(event.hash)), event.position - 1,
                                                size, proof)
        except (ProofError, ValueError) as exc:
            implied, reason = b"", str(exc)
        else:
            reason = "its hash does not lead to the signed root"
        if implied != root:
            findings.add(f"event {event.position}", f"{event.type} is not proven in {label} "
                                                    f"(size {size}): {reason}")


def check_leaves(findings: Findings, events: Sequence[RecordedEvent], nodes: NodeStore, size: int) -> None:
    """Cheaper than a proof, for the many events rewards judge: the tree's leaf is the event's hash."""
    covered = [e for e in events if e.position <= size]
    try:
        leaves = nodes.read_nodes([NodeId(0, e.position - 1) for e in covered])
    except NodeStoreError as exc:
        findings.add("merkle tree", f"leaves are missing: {exc}")
        return
    for event in covered:
        try:
            leaf = leaf_hash(chain_leaf(event.hash))
        except ValueError:
            leaf = b""  # a garbled hash matches no leaf
        if leaves[NodeId(0, event.position - 1)] != leaf:
            findings.add(f"event {event.position}", f"{event.type}: its hash is not the one the Merkle tree "
                                                    "holds for its position (rewritten after it was built)")


def check_checkpoints(findings: Findings, stored: Iterable[StoredCheckpoint], verifier: VerifierKey | None,
                      head: int | None) -> None:
    """Signatures and columns of stored checkpoints; a log shorter than one (``head``: the
    log's size, None when ``judge_log`` already compares the whole log) is truncated."""
    for cp in stored:
        findings.checked += 1
        subject = f"checkpoint {cp.position} (size {cp.checkpoint.size})"
        if head is not None and cp.checkpoint.size > head:
            gone = f"{head + 1}..{cp.checkpoint.size}"
            findings.add(subject, f"the log has {head} events, but this checkpoint signed "
                                  f"{cp.checkpoint.size}: positions {gone} are gone")
        if verifier is None:
            continue
        try:
            opened = open_checkpoint(cp.note, verifier)
        except CheckpointError as exc:
            findings.add(subject, f"the signed note does not verify with {verifier.vkey()}: {exc}")
            continue
        if opened.checkpoint != cp.checkpoint:
            findings.add(subject, "its columns differ from what its signed note says")
    if verifier is None:
        findings.note("no verifier key: checkpoint signatures were not checked")


def judge_log(findings: Findings, verdicts: Sequence[LogCheck], positions: Sequence[int]) -> None:
    """``audit.verify.check_log``'s verdicts (one per stored checkpoint, in order)."""
    for verdict, position in zip(verdicts, positions, strict=True):
        if not verdict.ok:
            findings.add(f"checkpoint {position} (size {verdict.checkpoint.size})",
                         f"{verdict.verdict}: {verdict.detail}")
