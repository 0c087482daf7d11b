"""The audit's checks, pure: rows as stored (dicts, read through their owners' ports) are
compared with the events that created them. The auditor (``audit.auditor``) reads, these
modules judge; each writes into a ``Findings`` (``audit.report``).

* ``contracts``: contract versions against ``contract.*`` events (and their own hashes);
* ``registry``: adapter versions (parent, links), status changes, alias moves, base models;
* ``training``: trigger firings, training runs, dataset manifests;
* ``rewards``: the reward chain, its seals in the log, each reward's contract hash;
* ``log``: events re-hashed, the signed checkpoints, the stored Merkle tree.
"""
