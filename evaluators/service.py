"""The evaluator's parts, built from the composition root's container for entry points."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from contract.service import ContractService, VersionNotFound
from evaluators.dryrun import DryRuns
from evaluators.reevaluation import Reevaluations
from evaluators.rewards import RewardQuery, RewardStore
from evaluators.worker import Evaluator
from events.feed import LogReader, open_event_reader
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
              reader: LogReader[RecordedEvent] | None = None) -> Evaluator:
    """A worker in consumer group ``group``: Kafka when configured, else the database log."""
    p = parts(container)
    return Evaluator(container.store, container.contracts, p.rewards, p.reevaluations,
                     reader or open_event_reader(container, group), batch_size)


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
