"""What an auditor can ask and prove: lineage up and down, and that nothing was altered.

The proofs' pure core, no database or broker: ``merkle`` (RFC 9162 hashing, proof shapes,
verification), ``nodestore`` (the port for complete-subtree hashes, an in-memory adapter),
``tree`` (appending and proving over a store), ``keys`` and ``note`` (Ed25519 signed
notes), ``checkpoints`` (the tlog checkpoint, its export file) and ``verify`` (what an
auditor runs offline with the public key). ``tables_draft`` proposes the SQL side;
``lineage`` walks an adapter's ancestry with every link re-checked.
"""
