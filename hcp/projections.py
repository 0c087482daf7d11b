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

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Connection

from access.key_log import API_KEYS
from audit.events import AuditFailed
from audit.runs import AuditCompleted
from contract.projections import CONTRACT_SERVING_MOVES, CONTRACT_VERSIONS
from contract.serving import SERVING_LOCK_KEY
from evaluators.chain import RewardSealed
from evaluators.events import ReevaluationFinished
from evaluators.model import RewardRecord
from evaluators.rewards import RewardStore
from events.projections.model import ProjectionSet
from events.sql_append import APPEND_LOCK_KEY
from harness.routing.events import RouterPromoted, RouterRegistered
from integrations.webhooks.projections import WEBHOOK_SUBSCRIPTIONS
from serving.continuity import ConversationHead
from trainer.datasets.projections import (
    DATASET_MANIFESTS,
    MANIFEST_CONTRACT_VERSIONS,
    MANIFEST_MEMBERS,
    REWARDS,
)
from trainer.journal import REGISTRY_LOCK_KEY
from trainer.registry import projections as registry
from trainer.runs.projections import TRAINING_RUNS
from trainer.triggers.projections import TRIGGER_FIRINGS, TRIGGER_POLICIES

PROJECTIONS = ProjectionSet(
    API_KEYS, CONTRACT_VERSIONS, CONTRACT_SERVING_MOVES,
    registry.SPECIALISTS, registry.BASE_MODELS,
    DATASET_MANIFESTS, MANIFEST_MEMBERS, MANIFEST_CONTRACT_VERSIONS,
    TRAINING_RUNS, TRIGGER_POLICIES, TRIGGER_FIRINGS,
    registry.ADAPTER_VERSIONS, registry.ADAPTER_CONTRACT_VERSIONS, registry.ADAPTER_ANCESTRY,
    registry.ADAPTER_STATUS_CHANGES,
    registry.ALIAS_MOVES, registry.ALIAS_PROTECTIONS, registry.ALIAS_MOVE_REQUESTS,
    registry.ALIAS_MOVE_DECISIONS, WEBHOOK_SUBSCRIPTIONS,
)

# The advisory locks a rebuild holds, in the order writers take them (registry, serving,
# then the log's own by appending), so no event commits between its replay and its writes.
WRITER_LOCKS = (REGISTRY_LOCK_KEY, SERVING_LOCK_KEY, APPEND_LOCK_KEY)


def replay_sources(rewards: RewardStore) -> Callable[[Connection], dict[str, Callable[..., Any]]]:
    """The chained records a replay's projectors read, on the replay's own connection: a
    manifest's rewards by id (``RecentRewards``)."""
    def on(conn: Connection) -> dict[str, Callable[..., Any]]:
        return {REWARDS: RecentRewards(rewards, conn)}

    return on


class RecentRewards:
    """Reward records by id for a replay, read through the reward store and kept for the
    manifests after: each manifest's held-out side lists every earlier held-out reward, so
    reading each manifest's rewards afresh would read the same rows again and again. At
    most ``capacity`` are kept (about 1.5 KB each), the least recently asked dropped
    first: memory stays bounded however long the log, and a manifest's three tables,
    which ask for the same ids one after another, are answered once."""

    def __init__(self, rewards: RewardStore, conn: Connection, capacity: int = 50_000) -> None:
        self.rewards, self.conn, self.capacity = rewards, conn, capacity
        self.kept: OrderedDict[str, RewardRecord] = OrderedDict()
        self.last: tuple[Sequence[str], dict[str, RewardRecord]] | None = None

    def __call__(self, ids: Sequence[str]) -> Mapping[str, RewardRecord]:
        if self.last is not None and self.last[0] is ids:
            return self.last[1]
        found: dict[str, RewardRecord] = {}
        missing = []
        for reward_id in ids:
            record = self.kept.get(reward_id)
            if record is None:
                missing.append(reward_id)
            else:
                found[reward_id] = record
                self.kept.move_to_end(reward_id)
        for record in self.rewards.by_ids(missing, self.conn) if missing else ():
            found[str(record.reward_id)] = self.kept[str(record.reward_id)] = record
        while len(self.kept) > self.capacity:
            self.kept.popitem(last=False)
        self.last = (ids, found)
        return found


# Server event types that change no projected table, and what vouches for them instead.
UNPROJECTED = {
    RewardSealed.TYPE: "seals the reward chain's head into the log; the audit's reward check holds "
                       "the chain to every seal",
    AuditFailed.TYPE: "a report that an audit found mismatches: it changes nothing",
    AuditCompleted.TYPE: "an audit run and its report, kept as history (the console lists them): "
                         "it changes nothing",
    ReevaluationFinished.TYPE: "a re-scoring job's end; its progress is working state (reevaluations) "
                               "and the rewards it wrote are chained records",
    RouterRegistered.TYPE: "a learned router version: read from its short stream router:<contract> "
                           "itself (harness.routing.events), no table holds it",
    RouterPromoted.TYPE: "which learned router version serves: read from its stream router:<contract>, "
                         "the latest promotion",
    ConversationHead.TYPE: "a chat answer's history digest: read from its stream conversation:<id> "
                           "itself by the gateway (serving.continuity), no table holds it",
}

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
    "webhook_deliveries": "each webhook delivery attempt and its answer: what was sent, not history "
                          "(the events delivered are in the log)",
    "judge_backlog": "subjects waiting for a judge and why: to do, not history (the verdicts are "
                     "judge.verdict events, the rewards chained records)",
}
