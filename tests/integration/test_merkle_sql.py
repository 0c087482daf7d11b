"""The Merkle tree in SQL: the node store port, the builder following the log, signed
checkpoints and the proofs served from them, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy.engine import Engine

from audit.builder import LogDoesNotExtendTree, TreeBuilder
from audit.checkpoint_store import CheckpointStore
from audit.keys import SigningKey
from audit.nodestore import NodeStore
from audit.proofs import NotYetCovered, Proofs
from audit.signer import CheckpointSigner, InconsistentTree, NoSigningKey
from audit.sql_nodestore import SqlNodeStore
from audit.tree import MerkleTree
from audit.verify import (
    AuditError,
    check_log,
    verify_consistency_bundle,
    verify_inclusion_bundle,
)
from events.sql_store import SqlEventStore
from tests.integration.conftest import append_many
from tests.integration.superuser import as_superuser, sql
from tests.unit.audit import reference
from tests.unit.audit.nodestore_contract import NodeStoreContract

KEY = SigningKey.generate("hcp.test/events")


class TestSqlNodeStore(NodeStoreContract):
    @pytest.fixture(autouse=True)
    def _engine(self, engine: Engine) -> None:
        self.engine = engine

    def make_store(self) -> NodeStore:
        as_superuser(self.engine, sql("DELETE FROM merkle_nodes"))  # each case: an empty tree
        return SqlNodeStore(self.engine)


@pytest.fixture
def store(engine: Engine) -> SqlEventStore:
    return SqlEventStore(engine)


@pytest.fixture
def signer(engine: Engine, store: SqlEventStore) -> CheckpointSigner:
    return CheckpointSigner(engine, store, TreeBuilder(engine, store), CheckpointStore(engine), KEY)


def test_the_builder_follows_the_log_in_pages(engine, store):
    events = append_many(store, streams=3, per_stream=7)
    builder = TreeBuilder(engine, store)
    assert builder.step(5) == 5 and builder.size() == 5
    assert builder.build(page=4) == 21 and builder.step() == 0
    leaves = [bytes.fromhex(e.hash) for e in events]
    assert MerkleTree(SqlNodeStore(engine)).root() == reference.mth(leaves)


def test_two_builders_at_once_build_one_tree(engine, store):
    events = append_many(store, streams=2, per_stream=20)
    builders = [TreeBuilder(engine, store) for _ in range(4)]
    threads = [threading.Thread(target=b.build, kwargs={"page": 2}) for b in builders]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builders[0].build() == 40
    assert MerkleTree(SqlNodeStore(engine)).root() == reference.mth([bytes.fromhex(e.hash) for e in events])


def test_the_builder_refuses_a_log_rewritten_under_it(engine, store):
    append_many(store, streams=1, per_stream=6)
    TreeBuilder(engine, store).build()
    as_superuser(engine, sql("DELETE FROM events WHERE position >= 5"))
    append_many(store, streams=1, per_stream=3)  # new events at 5.. chained to position 4
    with pytest.raises(LogDoesNotExtendTree, match="position 6"):
        TreeBuilder(engine, store).build()


def test_a_signed_checkpoint_proves_inclusion_and_consistency(engine, store, signer):
    events = append_many(store, streams=2, per_stream=5)
    first = signer.sign()
    assert first is not None and first.checkpoint.size == 10 and first.position == 1
    assert first.checkpoint.chain_head == events[-1].hash
    more = append_many(store, streams=1, per_stream=3)
    second = signer.sign()
    assert second is not None and second.checkpoint.size == 13
    assert signer.sign(only_if_grown=True) is None

    proofs = Proofs(engine, store, CheckpointStore(engine))
    answer = proofs.inclusion(events[3].event_id)
    assert answer.position == 4 and answer.checkpoint_position == 2
    assert verify_inclusion_bundle(answer.bundle, KEY.verifier()).size == 13
    old = proofs.inclusion(events[3].event_id, checkpoint=1).bundle
    assert verify_inclusion_bundle(old, KEY.verifier()).size == 10
    with pytest.raises(NotYetCovered):
        proofs.inclusion(more[0].event_id, checkpoint=1)
    old_cp, new_cp = verify_consistency_bundle(proofs.consistency(1, 2), KEY.verifier())
    assert (old_cp.size, new_cp.size) == (10, 13)
    forged = proofs.inclusion(events[3].event_id).bundle
    with pytest.raises(AuditError):
        verify_inclusion_bundle(type(forged)(events[4].hash, 3, forged.checkpoint, forged.proof),
                                KEY.verifier())
    kept = [s.checkpoint for s in CheckpointStore(engine).all()]
    assert all(c.ok for c in check_log((e.hash for e in store.iter_all(raw=True)), kept))


def test_a_proof_is_against_the_checkpoint_signed_last_even_after_one_was_served(engine, store, signer):
    """A process serving proofs keeps the checkpoint it saw and the tree's upper levels: a
    checkpoint signed since is still the one a proof is made in."""
    events = append_many(store, streams=4, per_stream=100)
    signer.sign()
    proofs = Proofs(engine, store, CheckpointStore(engine))
    assert proofs.inclusion(events[7].event_id).checkpoint_position == 1
    later = append_many(store, streams=1, per_stream=30)
    with pytest.raises(NotYetCovered):
        proofs.inclusion(later[0].event_id)
    signer.sign()
    for event in (events[7], events[300], later[0]):
        answer = proofs.inclusion(event.event_id)
        assert answer.checkpoint_position == 2
        assert verify_inclusion_bundle(answer.bundle, KEY.verifier()).size == 430


def test_no_key_no_checkpoint_and_a_tampered_tree_is_never_signed(engine, store, signer):
    append_many(store, streams=1, per_stream=4)
    unkeyed = CheckpointSigner(engine, store, TreeBuilder(engine, store), CheckpointStore(engine), None)
    with pytest.raises(NoSigningKey, match="hcp audit keygen"):
        unkeyed.sign()
    signer.sign()
    append_many(store, streams=1, per_stream=2)
    TreeBuilder(engine, store).build()
    as_superuser(engine, sql("UPDATE merkle_nodes SET hash = :h WHERE level = 2 AND idx = 0", h=b"\x07" * 32))
    with pytest.raises(InconsistentTree, match="does not extend checkpoint 1"):
        signer.sign()
