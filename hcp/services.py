"""The services of the composition root below the audit: the log, contracts, evaluators,
the registry and training (``Services``); ``hcp.bootstrap.Container`` adds the lineage
queries and the audit on top and is what entry points ask for.

Nothing is built at import time; each service is built on first use and kept, with only
the narrow collaborators it uses, through its constructor.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any

from kernel.errors import NotFound

# Each service's module is imported where the service is first built, not here: a command
# that reads the registry must not wait for Kafka's, Celery's and the audit's imports
# (`hcp adapters list` starts in a third of the time; bench/cli_startup.py).
if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from access.keys import ApiKeys
    from contract.serving import ContractServing
    from contract.versions import ContractVersions
    from evaluators.comparison import Comparisons
    from evaluators.dryrun import DryRuns
    from evaluators.dryrun_jobs import DryRunJobs
    from evaluators.evaluator import Evaluator
    from evaluators.publishing import Publisher
    from evaluators.reevaluation import Reevaluations
    from evaluators.rewards import RewardStore
    from evaluators.stats import RewardStats
    from events.checkpoints import Checkpoints
    from events.feed import LogReader
    from events.log_share import LogShare
    from events.model import RecordedEvent
    from events.relay import OutboxFeed
    from events.session_search import SessionSearch
    from events.store import Appender, EventStore
    from harness.checks.sandbox import CodeSandbox
    from hcp.health import DependencyProbes
    from hcp.references import RegistryReferences
    from hcp.settings import Settings
    from trainer.datasets.manifests import Manifests
    from trainer.registry.aliases import Aliases
    from trainer.registry.approvals import Approvals
    from trainer.registry.artifacts import ArtifactStore
    from trainer.registry.registry import Registry
    from trainer.registry.serving import Resolver
    from trainer.runs.celery_app import WorkerServices
    from trainer.runs.dispatch import Dispatcher
    from trainer.runs.model import RunOutcome
    from trainer.runs.runner import RunnerConfig, RunnerDeps
    from trainer.runs.store import Runs
    from trainer.triggers.firing import Triggers
    from trainer.triggers.sources import Policies

DEFAULT_GROUP = "evaluator"


@dataclass
class Services:
    settings: Settings
    engine: Engine
    dispatch_to: Dispatcher | None = None  # instead of the mode's own (tests record sends)

    @cached_property
    def code_sandbox(self) -> CodeSandbox:
        """The boundary model-written code runs behind, for the harness and the gate."""
        from harness.checks.sandbox import CodeSandbox

        return CodeSandbox(allow_unsandboxed=self.settings.unsafe_run_model_code_without_sandbox)

    # --- the log and contracts ---------------------------------------------------------

    @cached_property
    def store(self) -> EventStore:
        from events.sql_store import SqlEventStore

        return SqlEventStore(self.engine)

    @cached_property
    def appender(self) -> Appender:
        """What the API appends client batches with: concurrent requests of this process
        share a transaction (``events.group_commit``)."""
        from events.group_commit import GroupCommit
        from events.sql_store import SqlEventStore

        store = self.store
        return GroupCommit(store) if isinstance(store, SqlEventStore) else store

    @cached_property
    def session_search(self) -> SessionSearch:
        """Sessions by tenant, specialist, adapter version and outcome (the console's list)."""
        from events.session_search import SessionSearch

        return SessionSearch(self.engine)

    @cached_property
    def contracts(self) -> ContractVersions:
        from contract.versions import ContractVersions

        return ContractVersions(self.engine, self.store)

    @cached_property
    def serving(self) -> ContractServing:
        from contract.serving import ContractServing

        return ContractServing(self.engine, self.store, self.adapter_of)

    def adapter_of(self, specialist: str, alias: str, at: datetime | None) -> str | None:
        """Where ``alias`` of ``specialist`` points (None: nowhere, or no such specialist)."""
        try:
            move = self.aliases.at(specialist, alias, at)
        except NotFound:
            return None
        return move.adapter_id if move else None

    @cached_property
    def references(self) -> RegistryReferences:
        """What ingest checks serving records against (see events/ingest.py)."""
        from hcp.references import RegistryReferences

        return RegistryReferences(self.registry, self.contracts)

    @cached_property
    def keys(self) -> ApiKeys:
        from access.keys import ApiKeys

        return ApiKeys(self.engine, self.store, cache_ttl_s=self.settings.key_cache_seconds)

    @cached_property
    def health(self) -> DependencyProbes:
        from hcp.health import DependencyProbes

        settings = self.settings
        return DependencyProbes(self.engine, settings.kafka_bootstrap, settings.redis_url,
                                settings.health_timeout_s)

    # --- evaluators --------------------------------------------------------------------

    @cached_property
    def rewards(self) -> RewardStore:
        from evaluators.rewards import RewardStore

        return RewardStore(self.engine)

    @cached_property
    def reward_stats(self) -> RewardStats:
        from evaluators.stats import RewardStats

        return RewardStats(self.engine)

    @cached_property
    def reevaluations(self) -> Reevaluations:
        from evaluators.reevaluation import Reevaluations

        return Reevaluations(self.engine, self.store, self.contracts, self.rewards,
                             chunk_positions=self.settings.reevaluation_chunk_positions,
                             degraded_above=self.settings.max_error_rate,
                             subject_budget_s=self.settings.subject_budget_seconds)

    @cached_property
    def dry_runs(self) -> DryRuns:
        from evaluators.dryrun import DryRuns

        return DryRuns(self.store, self.contracts, self.settings.max_error_rate,
                       self.settings.subject_budget_seconds, self.settings.dry_run_budget_seconds)

    @cached_property
    def dry_run_jobs(self) -> DryRunJobs:
        from evaluators.dryrun_jobs import DryRunJobs

        return DryRunJobs(self.engine, self.dry_runs)

    @cached_property
    def publisher(self) -> Publisher:
        from evaluators.publishing import Publisher

        return Publisher(self.contracts, self.dry_runs, self.settings.publish_check_subjects)

    @cached_property
    def comparisons(self) -> Comparisons:
        from evaluators.comparison import Comparisons

        return Comparisons(self.contracts, self.rewards)

    def evaluator(self, group: str = DEFAULT_GROUP, batch_size: int | None = None,
                  reader: LogReader[RecordedEvent] | None = None,
                  session_timeout_s: float = 10.0, share: LogShare | None = None) -> Evaluator:
        """A worker in consumer group ``group``: Kafka when configured, else the database
        log (``share`` of it, when given: events/log_share.py); ``batch_size`` defaults to
        ``evaluators.evaluator.DEFAULT_BATCH``."""
        from evaluators.evaluator import DEFAULT_BATCH, Evaluator

        return Evaluator(self.store, self.contracts, self.rewards, self.reevaluations,
                         reader or self.event_reader(group, session_timeout_s, share),
                         batch_size or DEFAULT_BATCH,
                         subject_budget_s=self.settings.subject_budget_seconds)

    def event_reader(self, group: str, session_timeout_s: float = 10.0,
                     share: LogShare | None = None) -> LogReader[RecordedEvent]:
        """Kafka in consumer group ``group`` when configured (the group shares the topic's
        partitions out; ``share`` is not used), else the database log."""
        from events.feed import DatabaseLogReader, KafkaLogReader

        settings = self.settings
        if not settings.kafka_bootstrap:
            return DatabaseLogReader(self.engine, self.store, group, share=share)
        # The session timeout is how long a dead worker's partitions wait before another
        # member takes them over (the client's default is 45 s); a live worker heartbeats
        # from a background thread, so a long batch does not count against it.
        timeout_ms = int(session_timeout_s * 1000)
        return KafkaLogReader(settings.kafka_bootstrap, settings.events_topic, group,
                              session_timeout_ms=timeout_ms,
                              heartbeat_interval_ms=max(500, timeout_ms // 3))

    def outbox_feeds(self) -> list[OutboxFeed]:
        """What ``hcp relay`` publishes: the event log, the reward records, the checkpoints."""
        from audit.checkpoint_store import checkpoints_table_feed
        from evaluators.outbox import rewards_table_feed
        from events.relay import EventsFeed

        return [EventsFeed(self.store, self.settings.events_topic),
                rewards_table_feed(self.engine, self.settings.rewards_topic),
                checkpoints_table_feed(self.engine, self.settings.checkpoints_topic)]

    # --- the registry ------------------------------------------------------------------

    @cached_property
    def artifacts(self) -> ArtifactStore:
        from trainer.registry.artifacts import LocalArtifactStore

        return LocalArtifactStore(self.settings.resolved_artifact_dir)

    @cached_property
    def registry(self) -> Registry:
        from trainer.registry.registry import Registry

        return Registry(self.engine, self.store, self.contracts.content_hashes,
                        models_root=self.settings.resolved_models_dir)

    @cached_property
    def aliases(self) -> Aliases:
        from trainer.registry.aliases import Aliases

        return Aliases(self.engine, self.store)

    @cached_property
    def approvals(self) -> Approvals:
        from trainer.registry.approvals import Approvals

        return Approvals(self.engine, self.store)

    @cached_property
    def resolver(self) -> Resolver:
        from trainer.registry.serving import Resolver

        return Resolver(self.registry, self.aliases, self.artifacts)

    @cached_property
    def manifests(self) -> Manifests:
        from trainer.datasets.manifests import Manifests

        return Manifests(self.engine, self.rewards, self.store)

    # --- followers' positions ---------------------------------------------------------

    @cached_property
    def checkpoints(self) -> Checkpoints:
        """Named log positions of followers (the OpenLineage export resumes from one)."""
        from events.checkpoints import Checkpoints

        return Checkpoints(self.engine)

    # --- training ----------------------------------------------------------------------

    @cached_property
    def runs(self) -> Runs:
        from trainer.runs.store import Runs

        return Runs(self.engine, self.store)

    @cached_property
    def policies(self) -> Policies:
        from trainer.triggers.sources import Policies

        return Policies(self.engine, self.store, self.contracts)

    @cached_property
    def runner(self) -> RunnerDeps:
        from harness.gate import NAME as TASKS_HARNESS
        from harness.gate import tasks_harness
        from harness.probes import run_probes
        from trainer.gate.heldout import Gate
        from trainer.gate.probes import register_probes
        from trainer.gate.rollout import BUILT_IN, HarnessFactory
        from trainer.runs.registration import Registration
        from trainer.runs.runner import RunnerDeps

        # The gate's "tasks" rollout harness lives above the trainer: given to the gate here,
        # where it is built (the only one that looks harnesses up).
        tasks: HarnessFactory = partial(tasks_harness, sandbox=self.code_sandbox)
        harnesses = {**BUILT_IN, TASKS_HARNESS: tasks}
        register_probes(partial(run_probes, sandbox=self.code_sandbox))
        return RunnerDeps(
            runs=self.runs, registry=self.registry, artifacts=self.artifacts,
            manifests=self.manifests, gate=Gate(self.manifests, self.contracts, harnesses),
            registration=Registration(self.engine, self.store, self.runs, self.registry))

    def train(self, run_id: str, worker: str, config: RunnerConfig | None = None) -> RunOutcome:
        from trainer.runs.runner import run_training

        return run_training(self.runner, run_id, worker, config)

    @cached_property
    def dispatcher(self) -> Dispatcher:
        """Celery on Redis with ``HCP_REDIS_URL``; else a thread of this process (embedded)."""
        from trainer.runs.celery_app import make_celery
        from trainer.runs.dispatch import CeleryDispatcher, InProcessDispatcher

        if self.dispatch_to is not None:
            return self.dispatch_to
        if self.settings.redis_url:
            return CeleryDispatcher(make_celery(self.settings.redis_url))
        return InProcessDispatcher(lambda run_id, worker: self.train(run_id, worker))

    @cached_property
    def triggers(self) -> Triggers:
        from trainer.triggers.firing import Triggers

        return Triggers(self.engine, self.store, self.policies, self.rewards, self.manifests,
                        self.runs, self.dispatcher, self.serving, self.settings.serving_contract)

    def worker_services(self, requeue_after: float = 60.0) -> WorkerServices:
        """What a Celery worker process's tasks call (see ``celery_worker``); the re-send
        takes runs queued for ``requeue_after`` seconds, and runs on an expired lease."""
        from trainer.runs.celery_app import WorkerServices


        def evaluate_triggers() -> list[dict[str, Any]]:
            checks = self.triggers.evaluate()
            self.triggers.redispatch()
            return [c.to_json() for c in checks]

        return WorkerServices(train=self.train, evaluate_triggers=evaluate_triggers,
                              redispatch=lambda: self.triggers.redispatch(requeue_after))

    def close(self) -> None:
        if "dry_run_jobs" in self.__dict__:
            self.dry_run_jobs.close()
        self.engine.dispose()
