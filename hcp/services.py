"""The services of the composition root below the audit: the log, contracts, evaluators,
the registry and training (``Services``); ``hcp.bootstrap.Container`` adds the lineage
queries and the audit on top and is what entry points ask for.

Nothing is built at import time; each service is built on first use and kept, with only
the narrow collaborators it uses, through its constructor.
"""

from __future__ import annotations

from collections.abc import Callable
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
    from evaluators.judge_backlog import JudgeBacklog
    from evaluators.judging import Judging
    from evaluators.publishing import Publisher
    from evaluators.reevaluation import Reevaluations
    from evaluators.rewards import RewardStore
    from evaluators.session_expiry import SessionExpiry, Timeout
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
    from inference.engine import Engine as ModelEngine
    from inference.memo import AnswerMemo
    from inference.resolve import Resolver
    from integrations.judges import Answerer, JudgeModels
    from trainer.datasets.manifests import Manifests
    from trainer.registry.aliases import Aliases
    from trainer.registry.approvals import Approvals
    from trainer.registry.artifacts import ArtifactStore
    from trainer.registry.registry import Registry
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
                             subject_budget_s=self.settings.subject_budget_seconds,
                             judging=self.judging)

    @cached_property
    def judge_models(self) -> JudgeModels:
        """The judge models this process can ask: the operator's endpoints by digest, then
        the registered base models (contract/judges.py)."""
        from integrations.judges import JudgeModels, endpoints_of

        settings = self.settings
        return JudgeModels(endpoints_of(settings.judge_endpoints, settings.judge_timeout_s),
                           self.local_judge)

    def local_judge(self, digest: str) -> Answerer | None:
        """A registered base model with these weights, answered by this process's engine
        (the ``inference`` port); None: no base model has them (not registered)."""
        from inference.types import BaseModel
        from integrations.judges import EngineJudge

        hex_digest = digest.removeprefix("sha256:")
        entry = next((b for b in self.registry.base_models() if b.weights_sha256 == hex_digest), None)
        if entry is None:
            return None
        return EngineJudge(self.inference, BaseModel(entry.name, entry.path, entry.weights_sha256)).ask

    @cached_property
    def judging(self) -> Judging:
        """Judges' verdicts: the log's memo in front of the judge models."""
        from evaluators.judging import Judging

        return Judging(self.store, self.judge_models)

    @cached_property
    def judge_backlog(self) -> JudgeBacklog:
        """Subjects waiting for a judge, asked between the evaluator's polls."""
        from evaluators.judge_backlog import JudgeBacklog

        return JudgeBacklog(self.engine, self.store, self.contracts, self.rewards, self.judging,
                            self.settings.subject_budget_seconds)

    @cached_property
    def dry_runs(self) -> DryRuns:
        from evaluators.dryrun import DryRuns

        return DryRuns(self.store, self.contracts, self.settings.max_error_rate,
                       self.settings.subject_budget_seconds, self.settings.dry_run_budget_seconds,
                       judging=self.judging)

    @cached_property
    def dry_run_jobs(self) -> DryRunJobs:
        from evaluators.dryrun_jobs import DryRunJobs

        return DryRunJobs(self.engine, self.dry_runs)

    @cached_property
    def publisher(self) -> Publisher:
        from evaluators.publishing import Publisher

        return Publisher(self.contracts, self.dry_runs, self.settings.publish_check_subjects,
                         judge_known=self.judge_known)

    def judge_known(self, digest: str) -> bool:
        """Whether a judge model can be asked here: an endpoint, or a registered base model."""
        hex_digest = digest.removeprefix("sha256:")
        return digest in self.settings.judge_endpoints or any(
            b.weights_sha256 == hex_digest for b in self.registry.base_models())

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
                         subject_budget_s=self.settings.subject_budget_seconds,
                         expiry=self.session_expiry(), judging=self.judging,
                         backlog=self.judge_backlog)

    def session_expiry(self, clock: Callable[[], datetime] | None = None) -> SessionExpiry:
        """Ends idle sessions of outside traffic, under the serving contract's idle timeout
        (every evaluator runs one: the event is written once whoever writes it)."""
        from evaluators.session_expiry import CHECKPOINT, Checkpoint, SessionExpiry
        from events.checkpoints import Checkpoints

        marks = Checkpoints(self.engine)
        checkpoint = Checkpoint(lambda: marks.load(CHECKPOINT), lambda p: marks.save(CHECKPOINT, p))
        return SessionExpiry(self.store, self.idle_timeout, checkpoint,
                             **({"clock": clock} if clock is not None else {}))

    def idle_timeout(self) -> Timeout | None:
        """The idle timeout of the serving contract's newest serving version, if it sets one."""
        from evaluators.session_expiry import Timeout

        name = self.settings.serving_contract
        versions = sorted({m.version for m in self.serving.current(name).values()
                           if m.version is not None})
        if not versions:
            return None
        life = self.contracts.get(name, versions[-1]).parsed().harness.sessions
        seconds = life.idle_timeout_s if life is not None else None
        return Timeout(seconds, f"{name}@{versions[-1]}") if seconds else None

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
        """The one resolver from a registry name to the bytes that answer."""
        from inference.resolve import Resolver

        return Resolver(self.registry, self.aliases)

    # --- the model runtime -------------------------------------------------------------

    @cached_property
    def inference(self) -> ModelEngine:
        """The model engine (``self.engine`` is the database's): every model call of this
        process, the gateway, the harness, the gate's rollouts and probes, the router's
        features (``inference``). Nothing loads until a call needs it; answers already
        generated are read from ``<data_dir>/answers`` (``inference.memo``)."""
        from inference.memo import AnswerMemo

        settings = self.settings
        embedded = self._embedded_engine(AnswerMemo(settings.data_dir / "answers"))
        if settings.serving_backend != "vllm":
            return embedded
        from inference.vllm import VllmEngine

        return VllmEngine(settings.vllm_url, self.artifacts.open_dir, settings.serving_timeout_s,
                          local=embedded)

    def _embedded_engine(self, memo: AnswerMemo) -> ModelEngine:
        from inference.embedded.engine import EmbeddedEngine

        settings = self.settings
        return EmbeddedEngine(self.artifacts.open_dir, settings.serving_device or None,
                              settings.serving_max_adapters, settings.serving_batch_window_ms / 1000,
                              settings.serving_max_batch_rows, settings.serving_timeout_s, memo)

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
        from inference.rollouts import text_harness
        from inference.verify import verified_base
        from trainer.gate.heldout import Gate
        from trainer.gate.probes import register_probes
        from trainer.gate.rollout import HarnessFactory
        from trainer.runs.registration import Registration
        from trainer.runs.runner import RunnerDeps

        # The gate's rollout harnesses live above the trainer, on this process's engine:
        # given to the gate here, where it is built (the only one that looks harnesses up).
        tasks: HarnessFactory = partial(tasks_harness, sandbox=self.code_sandbox, engine=self.inference)
        harnesses: dict[str, HarnessFactory] = {"text": partial(text_harness, self.inference),
                                                TASKS_HARNESS: tasks}
        register_probes(partial(run_probes, sandbox=self.code_sandbox, engine=self.inference))
        return RunnerDeps(
            runs=self.runs, registry=self.registry, artifacts=self.artifacts,
            manifests=self.manifests, gate=Gate(self.manifests, self.contracts, harnesses, self.judging),
            registration=Registration(self.engine, self.store, self.runs, self.registry),
            verify_base=verified_base)

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
