"""The auditor's proofs: a Merkle tree over the log (RFC 9162) and signed checkpoints.

Pure core, no database or broker: ``merkle`` (hashing, proof shapes, verification),
``nodestore`` (the port for complete-subtree hashes, an in-memory adapter), ``tree``
(appending and proving over a store), ``keys`` and ``note`` (Ed25519 signed notes),
``checkpoints`` (the tlog checkpoint, its export file) and ``verify`` (what an auditor
runs offline with the public key). ``tables_draft`` proposes the SQL side.
"""
