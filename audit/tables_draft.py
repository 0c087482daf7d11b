"""DRAFT, not used by any code: the tables the integration is proposed to add.

Nothing here is imported or created. The integrator writes the real ``audit/tables.py``
(SQLAlchemy Core, on the shared metadata) together with an Alembic revision, adds the
append-only triggers the way the events table has them, and writes a ``SqlNodeStore``
adapter that passes ``tests/unit/audit/nodestore_contract.py``.

merkle_nodes: the node store (``audit.nodestore.NodeStore``)
-----------------------------------------------------------

::

    merkle_nodes = Table(
        "merkle_nodes", metadata,
        Column("level", SmallInteger, primary_key=True),    # 0 = leaf hashes
        Column("idx", BigInteger, primary_key=True),        # "index" is a reserved word
        Column("hash", LargeBinary(32), nullable=False),    # raw SHA-256, not hex: half the size
        CheckConstraint("level >= 0 AND level < 64", name="merkle_nodes_level"),
        CheckConstraint("idx >= 0", name="merkle_nodes_idx"),
    )
    # + BEFORE UPDATE OR DELETE OR TRUNCATE trigger raising, as on events (append-only).

* ``tree_size()``: ``SELECT coalesce(max(idx) + 1, 0) FROM merkle_nodes WHERE level = 0``
  (answered from the primary key index).
* ``read_nodes(ids)``: one query, ``WHERE (level, idx) IN ((:l1, :i1), ...)``
  (``tuple_(c.level, c.idx).in_(...)``; row values work on PostgreSQL and SQLite >= 3.15).
  A proof needs about 2 log2(n) rows: ~40 at a million events, one round trip.
* ``write_nodes(old_size, new_size, nodes)``: in the caller's transaction, check
  ``tree_size() == old_size`` (else StaleTreeError), then one multi-row INSERT. The
  primary key turns a concurrent appender's duplicate into an IntegrityError, which the
  adapter maps to StaleTreeError; the transaction then rolls back whole.
* Size: about two rows per event (n leaves + n - popcount(n) inner nodes), ~100 bytes a
  row with PostgreSQL's overheads: ~200 MB per million events. If that matters, level 0
  can be dropped and read from ``events.hash`` (leaf = SHA-256(0x00 || hash)); keep it
  simple first.

audit_checkpoints: what the server signed
-----------------------------------------

::

    audit_checkpoints = Table(
        "audit_checkpoints", metadata,
        Column("id", BigInteger, primary_key=True, autoincrement=True),
        Column("tree_size", BigInteger, nullable=False, index=True),
        Column("root", LargeBinary(32), nullable=False),
        Column("chain_head", String(64), nullable=False),
        Column("signed_at", DateTime(timezone=True), nullable=False),
        Column("key_id", String(8), nullable=False),        # which key signed (rotation)
        Column("note", Text, nullable=False),               # the signed note, verbatim
    )
    # append-only as well; the note is the checkpoint, the other columns are for queries.

Wiring (proposal)
-----------------

1. A tree builder follows the log like the relay does, one transaction per batch:
   ``size = store.tree_size()``, read ``events.hash`` for positions ``size+1 ..`` in
   order, ``MerkleTree(store).append(chain_leaf(h) for h in hashes)``, commit. It is a
   projection: rebuildable from the events, idempotent (a stale size refuses the write),
   and it keeps the ingest transaction and its position lock as they are. Proofs cover
   what the builder has reached, as in every transparency log (a "merge delay").
   The alternative, appending inside the ingest transaction under the position lock,
   makes proofs immediate but adds ~2 inserts per event and O(log n) reads per batch to
   the serialised section; choose it only if immediacy is required.
2. The signer, on a schedule and on demand, in one transaction: ``n = tree_size()``,
   ``root = MerkleTree(store).root(n)``, ``chain_head = events.hash at position n``,
   ``sign_checkpoint(Checkpoint(origin, n, root, chain_head, now), key)``, INSERT into
   audit_checkpoints and into the outbox for ``<prefix>.checkpoints`` (no dual write:
   the relay publishes it). Before signing, it should check that the new tree extends
   the previous checkpoint (``verify_consistency`` with ``consistency_proof``): a log
   must never sign two inconsistent checkpoints.
3. ``GET /v1/audit/proof/{event_id}``: the latest checkpoint with ``tree_size >=
   position`` (or the one asked for), ``MerkleTree(store).inclusion_proof(position - 1,
   tree_size)``, answered as ``audit.verify.InclusionBundle.to_json()``.
"""
