"""Every table of the schema and what vouches for its rows.

* the log itself (``events``): its hash chain, the Merkle tree and the signed checkpoints;
* chained records (rewards, Merkle nodes, signed checkpoints): their own chain or
  signature, checked by the audit;
* working state (followers' positions, job progress): not history, nothing the audit
  vouches for, each with why;
* everything else: a projection of the log, written only by its projector
  (``events.projections``), replayed and compared by ``hcp rebuild --check`` and the audit.

``tests/unit/test_projection_coverage.py`` fails when a table of the metadata is in none
of these, or in two. The projections are listed parents first (the order rows are
written in, and a rebuild inserts in).
"""

from __future__ import annotations

from access.key_log import KEY_PROJECTIONS
from contract.serving import SERVING_LOCK_KEY
from events.projections.model import ProjectionSet
from events.sql_append import APPEND_LOCK_KEY
from trainer.journal import REGISTRY_LOCK_KEY

PROJECTIONS: ProjectionSet = KEY_PROJECTIONS

# The advisory locks a rebuild holds, in the order writers take them (registry, serving,
# then the log's own by appending), so no event commits between its replay and its writes.
WRITER_LOCKS = (REGISTRY_LOCK_KEY, SERVING_LOCK_KEY, APPEND_LOCK_KEY)

LOG = {"events": "the log: its hash chain, the Merkle tree over it and the signed checkpoints"}

RECORDS = {
    "reward_records": "its own hash chain (evaluators/chain.py), sealed into the log by "
                      "reward.sealed events; each reward's contract hash against the log's",
    "merkle_nodes": "recomputed from the events' chain hashes; roots against every signed checkpoint",
    "audit_checkpoints": "each note verified with the log's public key; its columns against the note",
}

WORKING = {
    "checkpoints": "how far each follower (relay, evaluators, exports) has read: a cursor, not history",
    "reevaluations": "progress of re-scoring jobs; the rewards they write are chained records",
    "dry_run_jobs": "queued and finished dry runs: previews that change nothing",
}
