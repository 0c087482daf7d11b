"""SQL tables of the evaluators: reward records and re-evaluation jobs.

Reward records: append-only, one per (subject, contract version).

``position`` is gapless and in commit order (allocated under a lock like the event
log's), so the outbox relay can tail it to Kafka ``hcp.rewards`` and the trainer can
cut datasets by position.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKeyConstraint,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    Uuid,
)

from kernel.db import metadata

reward_records = Table(
    "reward_records",
    metadata,
    Column("position", BigInteger, primary_key=True, autoincrement=False),
    Column("reward_id", Uuid, nullable=False, unique=True),
    Column("subject_id", String(300), nullable=False),  # e.g. turn:<stream>:<seq>, episode:<stream>
    Column("subject_kind", String(20), nullable=False),  # turn | episode
    Column("stream_id", String(200), nullable=False),
    Column("first_position", BigInteger, nullable=False),
    Column("last_position", BigInteger, nullable=False),
    Column("event_ids", JSON, nullable=False),
    Column("contract_name", String(100), nullable=False),
    Column("contract_version", Integer, nullable=False),
    Column("contract_hash", String(64), nullable=False),
    Column("evaluator_version", String(50), nullable=False),
    Column("score", Float),  # NULL exactly when ``error`` is set: never a silent zero
    Column("components", JSON, nullable=False),  # criterion id -> score in [0, 1]
    Column("gates", JSON, nullable=False),  # gate id -> passed
    Column("split", String(10), nullable=False),  # train | held_out
    Column("specialist", String(100)),
    Column("adapter_version", String(200)),
    Column("eligible", Boolean, nullable=False),  # usable for training under [training]
    Column("error", Text),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("tenant", String(200)),  # the tenant of the subject's events (NULL: operators only)
    # The reward chain (evaluators/chain.py): tamper evidence that names the reward.
    Column("prev_hash", String(64), nullable=False),
    Column("hash", String(64), nullable=False),
    # The judges' verdicts the score rests on (evaluators/model.py); [] without judges,
    # NULL in rows written before the column existed.
    Column("judgements", JSON),
    UniqueConstraint("subject_id", "contract_name", "contract_version",
                     name="uq_reward_records_subject_version"),
    ForeignKeyConstraint(["contract_name", "contract_version"],
                         ["contract_versions.name", "contract_versions.version"],
                         name="fk_reward_records_contract"),
    Index("ix_reward_records_contract", "contract_name", "contract_version", "position"),
    Index("ix_reward_records_specialist", "specialist", "position"),
    Index("ix_reward_records_stream", "stream_id", "position"),
    Index("ix_reward_records_tenant", "tenant", "position"),
    Index("ix_reward_records_adapter", "adapter_version", "position"),
)

# Re-scoring history under a newly published version: one row per job, with progress.
reevaluations = Table(
    "reevaluations",
    metadata,
    Column("job_id", String(36), primary_key=True),
    Column("contract_name", String(100), nullable=False),
    Column("contract_version", Integer, nullable=False),
    Column("from_position", BigInteger, nullable=False),
    Column("to_position", BigInteger, nullable=False),  # log head when the job started
    Column("done_position", BigInteger, nullable=False),
    Column("subjects_scored", Integer, nullable=False),  # applicable and scored without error
    Column("subjects_errored", Integer, nullable=False, server_default="0"),  # applicable, errored
    Column("subjects_skipped", Integer, nullable=False, server_default="0"),  # not applicable
    Column("status", String(20), nullable=False),  # running | succeeded | degraded | failed
    Column("error", Text),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("contract_name", "contract_version", "from_position",
                     name="uq_reevaluations_version_from"),
)

# Dry runs too large to answer within one request: the job, its progress and its report.
dry_run_jobs = Table(
    "dry_run_jobs",
    metadata,
    Column("job_id", String(36), primary_key=True),
    Column("contract_name", String(100), nullable=False),
    Column("contract_version", Integer, nullable=False),
    Column("baseline_version", Integer),
    Column("selection", JSON, nullable=False),
    Column("top", Integer, nullable=False),
    Column("max_error_rate", Float),  # None: the server's HCP_MAX_ERROR_RATE
    Column("tenant", String(200)),  # whose subjects it scores (NULL: every tenant's)
    Column("created_by", String(200), nullable=False),
    Column("status", String(20), nullable=False),  # queued | running | succeeded | failed
    Column("done", Integer, nullable=False),  # subjects scored so far
    Column("total", Integer, nullable=False),  # subjects selected
    Column("result", JSON),  # the dry run's JSON once it succeeded
    Column("error", Text),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

# Subjects whose judges have not answered yet (evaluators/judge_backlog.py): working state,
# one row per (subject, contract version) waiting for a verdict, with why it still waits.
# Its rows are not a projection of the log: a row says "to do", and its reward (written
# with the row marked done, in one transaction) is what the log's consumers see.
judge_backlog = Table(
    "judge_backlog",
    metadata,
    Column("subject_id", String(300), primary_key=True),
    Column("contract_name", String(100), primary_key=True),
    Column("contract_version", Integer, primary_key=True),
    Column("subject_kind", String(20), nullable=False),
    Column("stream_id", String(200), nullable=False),
    Column("closer_seq", BigInteger, nullable=False),  # the event that closed the subject
    Column("tenant", String(200)),
    Column("status", String(20), nullable=False),  # waiting | done
    Column("attempts", Integer, nullable=False),  # asks of a judge that failed
    Column("last_error", Text),  # why the last ask failed (endpoint down, model unknown …)
    Column("next_at", DateTime(timezone=True), nullable=False),  # not asked again before
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Index("ix_judge_backlog_due", "status", "next_at"),
)
