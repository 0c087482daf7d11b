"""The composition root: the one place every service is built and wired to the others.

Nothing is built at import time. Entry points (the API lifespan, CLI commands, Celery
workers) call ``bootstrap()`` and ask the container for what they need; each service
gets only the narrow collaborators it uses, through its constructor. Services are built
on first use and kept, so a command that only reads the log never loads the trainer.

Two modules, in the packages' layer order: ``hcp.services`` builds the log, contracts,
evaluators, registry and training; ``Container`` here adds what sits above them, the
lineage queries and the audit.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from hcp.services import Services
from kernel.errors import Invalid

# As in hcp.services: each service's module is imported where the service is built.
if TYPE_CHECKING:
    from audit.asof import AsOf
    from audit.auditor import Auditor
    from audit.builder import TreeBuilder
    from audit.checkpoint_store import CheckpointStore
    from audit.downstream import Downstream
    from audit.exports.openlineage import OpenLineageEvents
    from audit.jobs import AuditJobs
    from audit.keys import SigningKey, VerifierKey
    from audit.lineage import Lineage
    from audit.proofs import Proofs
    from audit.runs import AuditRuns
    from audit.signer import CheckpointSigner
    from audit.upstream import Upstream
    from evaluators.seal import RewardSeals
    from events.projections.rebuild import Rebuilder
    from hcp.health import Probe
    from hcp.integrations_root import Integrations
    from hcp.settings import Settings
    from integrations.downloads import DownloadDirs
    from serving.gateway import ChatGateway
    from trainer.datasets.members import ManifestIndex
    from trainer.registry.ancestry import Ancestry


log = logging.getLogger(__name__)
LOADING = "loading the model"


@dataclass
class Container(Services):
    """Every service: those of ``Services`` and the auditor's read side on top of them."""

    # --- lineage queries ---------------------------------------------------------------

    @cached_property
    def lineage(self) -> Lineage:
        from audit.lineage import Lineage

        return Lineage(self.registry, self.manifests, self.artifacts)

    @cached_property
    def ancestry(self) -> Ancestry:
        from trainer.registry.ancestry import Ancestry

        return Ancestry(self.engine)

    @cached_property
    def manifest_index(self) -> ManifestIndex:
        from trainer.datasets.members import ManifestIndex

        return ManifestIndex(self.engine)

    @cached_property
    def upstream(self) -> Upstream:
        from audit.upstream import Upstream
        from trainer.triggers.log import FiringLog

        return Upstream(self.engine, self.ancestry, self.registry, self.manifest_index, self.manifests,
                        self.runs, FiringLog(self.engine), self.rewards, self.store)

    @cached_property
    def downstream(self) -> Downstream:
        from audit.downstream import Downstream

        return Downstream(self.engine, self.store, self.rewards, self.contracts, self.manifest_index,
                          self.ancestry, self.aliases)

    @cached_property
    def as_of(self) -> AsOf:
        from audit.asof import AsOf

        return AsOf(self.engine)

    @cached_property
    def openlineage(self) -> OpenLineageEvents:
        from audit.exports.openlineage import OpenLineageEvents

        return OpenLineageEvents(self.store, self.runs, self.registry, self.manifest_index,
                                 self.rewards, self.contracts, self.settings.openlineage_namespace)

    # --- the audit ---------------------------------------------------------------------

    @cached_property
    def signing_key(self) -> SigningKey | None:
        """The checkpoint key from ``HCP_CHECKPOINT_KEY_FILE`` (None: checkpoints are not signed)."""
        from audit.keys import KeyFormatError, SigningKey

        path = self.settings.checkpoint_key_file
        if path is None:
            return None
        try:
            return SigningKey.load(path.read_bytes(), self.settings.checkpoint_key_name or None)
        except (OSError, KeyFormatError) as exc:
            raise Invalid(f"HCP_CHECKPOINT_KEY_FILE={path}: {exc}") from None

    @property
    def verifier(self) -> VerifierKey | None:
        return self.signing_key.verifier() if self.signing_key else None

    @cached_property
    def tree_builder(self) -> TreeBuilder:
        from audit.builder import TreeBuilder

        return TreeBuilder(self.engine, self.store)

    @cached_property
    def checkpoint_store(self) -> CheckpointStore:
        from audit.checkpoint_store import CheckpointStore

        return CheckpointStore(self.engine)

    @cached_property
    def reward_seals(self) -> RewardSeals:
        from evaluators.seal import RewardSeals

        return RewardSeals(self.rewards, self.store)

    @cached_property
    def checkpoint_signer(self) -> CheckpointSigner:
        from audit.signer import CheckpointSigner

        # The reward chain's head is sealed into the log first, so the checkpoint covers it.
        return CheckpointSigner(self.engine, self.store, self.tree_builder, self.checkpoint_store,
                                self.signing_key, before_signing=self.reward_seals.seal)

    @cached_property
    def proofs(self) -> Proofs:
        from audit.proofs import Proofs

        return Proofs(self.engine, self.store, self.checkpoint_store)

    @cached_property
    def auditor(self) -> Auditor:
        from audit.failures import RecordingAuditor
        from audit.sources import AuditSources
        from audit.sql_nodestore import SqlNodeStore
        from trainer.registry.records import RegistryRecords
        from trainer.triggers.records import FiringRecords

        # Recording: a failed audit is an audit.failed event (webhooks hear of it).
        return RecordingAuditor(AuditSources(
            store=self.store, contracts=self.contracts, serving=self.serving, rewards=self.rewards,
            registry=RegistryRecords(self.engine), manifests=self.manifests, runs=self.runs,
            firings=FiringRecords(self.engine), artifacts=self.artifacts,
            checkpoints=self.checkpoint_store, nodes=lambda: SqlNodeStore(self.engine),
            verifier=self.verifier, rebuilder=self.rebuilder))

    @cached_property
    def rebuilder(self) -> Rebuilder:
        """Every projection replayed from the log: ``hcp rebuild`` and the audit."""
        from events.projections.rebuild import Rebuilder
        from hcp.projections import PROJECTIONS, WRITER_LOCKS, replay_sources

        return Rebuilder(self.engine, self.store, PROJECTIONS, replay_sources(self.rewards),
                         locks=WRITER_LOCKS)

    @cached_property
    def audit_jobs(self) -> AuditJobs:
        from audit.jobs import AuditJobs

        return AuditJobs()

    @cached_property
    def audit_runs(self) -> AuditRuns:
        """Audits run and kept in the log (``audit.completed``): the CLI, API and console."""
        from audit.runs import AuditRuns

        return AuditRuns(self.store, lambda: self.auditor)

    # --- integrations ------------------------------------------------------------------

    @cached_property
    def integrations(self) -> Integrations:
        """Webhooks, OTLP in, evaluation results out (docs/integrations.md)."""
        from hcp.integrations_root import Integrations

        return Integrations(self)

    @cached_property
    def downloads(self) -> DownloadDirs:
        """Base models and adapter artifacts for download, verified once per state of their
        files."""
        from integrations.downloads import DownloadDirs

        return DownloadDirs()

    # --- serving -----------------------------------------------------------------------

    @cached_property
    def chat(self) -> ChatGateway:
        """The chat gateway (docs/serving.md); torch loads on its first generation."""
        from hcp.serving_root import build_gateway

        return build_gateway(self)

    # Why chat cannot answer yet (``warm_chat``): LOADING while the model loads, the error's
    # kind when that failed; None once it can (or when no warming was asked for).
    chat_warmth: str | None = field(default=None, init=False, repr=False)

    def warm_chat(self) -> threading.Thread:
        """Load what serves each specialist now, in a thread (``hcp serve`` at start): until
        it is done, ``/healthz`` says chat is not ready, so a load balancer sends no chat
        request before the model can answer it."""
        self.chat_warmth = LOADING

        def warm() -> None:
            try:
                self.chat.warm()
            except Exception as exc:  # noqa: BLE001 (readiness reports it; the log says why)
                log.exception("warming the chat engine failed")
                self.chat_warmth = f"warming failed ({type(exc).__name__})"
            else:
                self.chat_warmth = None

        thread = threading.Thread(target=warm, name="hcp-warm-chat", daemon=True)
        thread.start()
        return thread

    def thread_probes(self) -> list[Probe]:
        """The threads of this process that answer requests: the chat engine's, once it is
        warming or a chat request has built it (``/healthz`` and ``/livez``)."""
        from hcp.health import Probe

        if self.chat_warmth is not None:
            return [Probe("chat", False, 0.0, self.chat_warmth)]
        gateway = self.__dict__.get("chat")  # not built yet: no thread to report on
        if gateway is None:
            return []
        reason = gateway.engine.liveness()
        return [Probe("chat", reason is None, 0.0, reason)]

def bootstrap(settings: Settings | None = None, check_schema: bool = True) -> Container:
    """Every service over the configured database, which must exist already: only
    `hcp db upgrade` (or the demo, which runs it) creates one, so a mistyped
    ``HCP_DATA_DIR`` is refused instead of read as an empty log."""
    from hcp.migrate import require_database, require_schema_at_head
    from hcp.settings import get_settings
    from kernel.db import make_engine

    settings = settings or get_settings()
    require_database(settings)
    engine = make_engine(settings.resolved_database_url)
    if check_schema:
        require_schema_at_head(engine)
    return Container(settings=settings, engine=engine)


def celery_worker(settings: Settings, requeue_after: float = 60.0, **options: Any) -> Any:
    """The Celery app of a training worker; each worker process bootstraps its own
    container on its first task (after the prefork fork)."""
    from trainer.runs.celery_app import make_celery

    return make_celery(settings.redis_url,
                       services=lambda: bootstrap(settings).worker_services(requeue_after),
                       **options)
