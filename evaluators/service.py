"""The evaluator's parts, built from the composition root's container for entry points."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from contract.service import ContractService, VersionNotFound
from evaluators.dryrun import DryRuns
from evaluators.reevaluation import Reevaluations
from evaluators.rewards import RewardQuery, RewardStore
from evaluators.worker import Evaluator
from events.feed import KafkaLogReader, LogReader, open_event_reader
from events.model import RecordedEvent

if TYPE_CHECKING:
    from hcp.bootstrap import Container

DEFAULT_GROUP = "evaluator"


@dataclass(frozen=True)
class EvaluatorParts:
    rewards: RewardStore
    reevaluations: Reevaluations
    dry_runs: DryRuns
    contracts: ContractService


def parts(container: Container) -> EvaluatorParts:
    rewards = RewardStore(container.engine)
    return EvaluatorParts(
        rewards=rewards,
        reevaluations=Reevaluations(container.engine, container.store, container.contracts, rewards),
        dry_runs=DryRuns(container.engine, container.store, container.contracts),
        contracts=container.contracts,
    )


def evaluator(container: Container, group: str = DEFAULT_GROUP, batch_size: int = 500,
              reader: LogReader[RecordedEvent] | None = None,
              session_timeout_s: float = 10.0) -> Evaluator:
    """A worker in consumer group ``group``: Kafka when configured, else the database log."""
    p = parts(container)
    return Evaluator(container.store, container.contracts, p.rewards, p.reevaluations,
                     reader or event_reader(container, group, session_timeout_s), batch_size)


def event_reader(container: Container, group: str,
                 session_timeout_s: float = 10.0) -> LogReader[RecordedEvent]:
    settings = container.settings
    if not settings.kafka_bootstrap:
        return open_event_reader(container, group)
    # The session timeout is how long a dead worker's partitions wait before another
    # member takes them over (the client's default is 45 s); a live worker heartbeats
    # from a background thread, so a long batch does not count against it.
    timeout_ms = int(session_timeout_s * 1000)
    return KafkaLogReader(settings.kafka_bootstrap, settings.events_topic, group,
                          session_timeout_ms=timeout_ms, heartbeat_interval_ms=max(500, timeout_ms // 3))


def parse_contract_ref(text: str) -> tuple[str, str | None]:
    """``NAME``, ``NAME@3`` or ``NAME@latest`` into (name, version text or None)."""
    name, _, version = text.partition("@")
    if not name or (version and version != "latest" and not version.isdigit()):
        raise ValueError(f"expected NAME, NAME@<version> or NAME@latest, got {text!r}")
    return name, version or None


def reward_query(contracts: ContractService, contract: str | None, version: str | None,
                 **filters: object) -> RewardQuery:
    """A query for rewards under ``contract`` at ``version`` (a number, "latest" = the
    latest published version, or None = every version)."""
    number: int | None = None
    if version == "latest":
        if contract is None:
            raise VersionNotFound("version 'latest' needs a contract name")
        number = contracts.latest_published(contract).version
    elif version is not None:
        number = int(version)
    return RewardQuery(contract_name=contract, contract_version=number, **filters)  # type: ignore[arg-type]
