"""Contract references as users write them: ``NAME``, ``NAME@3`` or ``NAME@latest``."""

from __future__ import annotations

from contract.versions import ContractVersions, VersionNotFound
from evaluators.rewards import RewardQuery


def parse_contract_ref(text: str) -> tuple[str, str | None]:
    """``NAME``, ``NAME@3`` or ``NAME@latest`` into (name, version text or None)."""
    name, _, version = text.partition("@")
    if not name or (version and version != "latest" and not version.isdigit()):
        raise ValueError(f"expected NAME, NAME@<version> or NAME@latest, got {text!r}")
    return name, version or None


def reward_query(contracts: ContractVersions, contract: str | None, version: str | None,
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
