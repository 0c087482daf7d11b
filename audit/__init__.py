"""What an auditor can ask and prove: lineage up and down, and that nothing was altered.

The proofs' pure core, no database or broker: ``merkle`` (RFC 9162 hashing, proof shapes,
verification), ``nodestore`` (the port for complete-subtree hashes, an in-memory adapter),
``tree`` (appending and proving over a store), ``keys`` and ``note`` (Ed25519 signed
notes), ``checkpoints`` (the tlog checkpoint, its export file) and ``verify`` (what an
auditor runs offline with the public key).

Their SQL side: ``tables`` (``merkle_nodes``, ``audit_checkpoints``), ``sql_nodestore``,
``builder`` (the tree follows the log), ``checkpoint_store`` (with its outbox feed),
``signer`` (on demand and on a schedule) and ``proofs`` (what the API serves).

The audit re-derived from the log: ``checks`` (pure: rows against the events that made
them), ``sources`` (the owners' ports it reads through), ``auditor`` (everything) and
``ancestry`` (one adapter and all its parents), ``report`` and ``jobs`` (long audits in
the API). ``lineage`` walks an adapter's ancestry with every link re-checked.
See docs/audit.md.
"""
