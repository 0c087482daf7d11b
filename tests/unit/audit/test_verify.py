import hashlib
import json
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from audit.checkpoints import Checkpoint, CheckpointError, SignedCheckpoint, sign_checkpoint
from audit.keys import SigningKey
from audit.merkle import chain_leaf
from audit.nodestore import MemoryNodeStore
from audit.tree import MerkleTree
from audit.verify import (
    AuditError,
    ConsistencyBundle,
    InclusionBundle,
    check_log,
    verify_consistency_bundle,
    verify_inclusion_bundle,
)

ORIGIN = "hcp.example/events"
KEY = SigningKey.generate(ORIGIN)
HASHES = [hashlib.sha256(f"event {i}".encode()).hexdigest() for i in range(1, 101)]  # positions 1..100


@pytest.fixture(scope="module")
def tree() -> MerkleTree:
    t = MerkleTree(MemoryNodeStore())
    t.append(chain_leaf(h) for h in HASHES)
    return t


def signed(tree: MerkleTree, size: int) -> SignedCheckpoint:
    head = HASHES[size - 1] if size else "0" * 64
    cp = Checkpoint(ORIGIN, size, tree.root(size), head, datetime(2026, 12, 1, tzinfo=UTC))
    return sign_checkpoint(cp, KEY)


def inclusion(tree: MerkleTree, position: int, size: int) -> InclusionBundle:
    return InclusionBundle(HASHES[position - 1], position - 1, signed(tree, size).note,
                           tuple(tree.inclusion_proof(position - 1, size)))


def test_an_inclusion_bundle_verifies_through_json(tree):
    bundle = inclusion(tree, 42, 77)
    wire = json.loads(json.dumps(bundle.to_json()))
    assert InclusionBundle.from_json(wire) == bundle
    assert verify_inclusion_bundle(InclusionBundle.from_json(wire), KEY.verifier()).size == 77


def test_inclusion_bundles_that_lie_are_refused(tree):
    bundle = inclusion(tree, 42, 77)
    flipped = (bytes([bundle.proof[0][0] ^ 1]) + bundle.proof[0][1:], *bundle.proof[1:])
    for bad in [replace(bundle, proof=flipped), replace(bundle, leaf_index=42),
                replace(bundle, event_hash=HASHES[42]), replace(bundle, checkpoint=signed(tree, 78).note)]:
        with pytest.raises(AuditError, match="not proven"):
            verify_inclusion_bundle(bad, KEY.verifier())
    with pytest.raises(CheckpointError):
        verify_inclusion_bundle(bundle, SigningKey.generate(ORIGIN).verifier())


@pytest.mark.parametrize("doc", [
    {}, {"event_hash": "ab" * 32, "leaf_index": "1", "checkpoint": "", "proof": []},
    {"event_hash": "ab" * 32, "leaf_index": True, "checkpoint": "", "proof": []},
    {"event_hash": "ab" * 32, "leaf_index": 1, "checkpoint": "", "proof": [1]},
    {"event_hash": "ab" * 32, "leaf_index": 1, "checkpoint": "", "proof": ["not base64!"]},
])
def test_malformed_bundles_are_refused(doc):
    with pytest.raises(AuditError):
        InclusionBundle.from_json(doc)


def test_a_consistency_bundle_verifies_and_a_forked_one_does_not(tree):
    bundle = ConsistencyBundle(signed(tree, 30).note, signed(tree, 100).note,
                               tuple(tree.consistency_proof(30, 100)))
    old, new = verify_consistency_bundle(ConsistencyBundle.from_json(bundle.to_json()), KEY.verifier())
    assert (old.size, new.size) == (30, 100)
    fork = MerkleTree(MemoryNodeStore())
    fork.append(chain_leaf(h) for h in [*HASHES[:29], "cd" * 32, *HASHES[30:]])
    forked_new = sign_checkpoint(replace(signed(tree, 100).checkpoint, root=fork.root()), KEY).note
    with pytest.raises(AuditError, match="does not extend"):
        verify_consistency_bundle(replace(bundle, new_checkpoint=forked_new,
                                          proof=tuple(fork.consistency_proof(30, 100))), KEY.verifier())
    with pytest.raises(AuditError, match="only grows"):
        backwards = ConsistencyBundle(bundle.new_checkpoint, bundle.old_checkpoint, bundle.proof)
        verify_consistency_bundle(backwards, KEY.verifier())


def test_a_log_that_kept_growing_matches_every_kept_checkpoint(tree):
    kept = [signed(tree, n).checkpoint for n in (100, 1, 50, 0)]
    checks = check_log(iter(HASHES), kept)
    assert [c.ok for c in checks] == [True] * 4
    assert [c.checkpoint.size for c in checks] == [100, 1, 50, 0]
    assert all(c.log_size == 100 for c in checks)


def test_a_truncated_tail_is_reported(tree):
    [check] = check_log(HASHES[:97], [signed(tree, 100).checkpoint])
    assert check.verdict == "truncated" and not check.ok
    assert "positions 98..100 are gone" in check.detail


def test_rewritten_history_is_reported(tree):
    rewritten = [*HASHES[:9], "ef" * 32, *HASHES[10:]]
    early, late = check_log(rewritten, [signed(tree, 9).checkpoint, signed(tree, 60).checkpoint])
    assert early.ok  # nothing before position 10 changed
    assert late.verdict == "rewritten" and "up to position 60" in late.detail


def test_a_checkpoint_whose_chain_head_is_not_the_logs_is_reported(tree):
    cp = replace(signed(tree, 20).checkpoint, chain_head="ef" * 32)
    [check] = check_log(HASHES, [cp])
    assert check.verdict == "rewritten" and "chain head" in check.detail
