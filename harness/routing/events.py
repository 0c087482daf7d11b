"""Learned router versions in the log: ``router.registered`` and ``router.promoted`` on
stream ``router:<contract>``, numbered 1, 2 … per contract.

A registered version names everything it came from: the contract (and the serving
version whose specialists it learned), the base model and its weights hash, the
artifact's sha256, the ``route.decided`` events it was trained and gated on (and a digest
of both lists), the log position it read up to, its settings and its gate record. A
promotion points the contract's router at a version (or back at an earlier one). The
stream is short (one event per version and move), so readers read it whole instead of a
projection: what serves is the latest promotion.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field

from events.model import EventMetadata
from events.server_events import ServerEvent, logged
from events.store import EventStore
from kernel.errors import NotFound


class RouterRegistered(ServerEvent):
    TYPE = "router.registered"
    SUMMARY = "A learned router version: what it was trained and gated on, its artifact, its gate"

    contract: str
    version: int
    contract_version: int = Field(description="The serving version whose specialists it routes to")
    labels: list[str]
    base_model: str
    base_weights_sha256: str
    artifact_sha256: str
    examples: dict[str, int] = Field(description="Counts by side (train, held_out) and source "
                                                 "(task, reward)")
    train_event_ids: list[str] = Field(description="The route.decided events it was fitted on")
    held_out_event_ids: list[str] = Field(description="The route.decided events its gate judged")
    examples_sha256: str
    through_position: int = Field(description="The log position its examples were read up to")
    settings: dict[str, Any]
    gate: dict[str, Any]


class RouterPromoted(ServerEvent):
    TYPE = "router.promoted"
    SUMMARY = "A contract's learned router now serves this version"

    contract: str
    version: int
    previous_version: int | None
    reason: str


class RouterNotFound(NotFound):
    code = "router_not_found"


@dataclass(frozen=True)
class RouterVersion:
    registered: RouterRegistered
    position: int
    actor: str | None

    @property
    def ref(self) -> str:
        return f"{self.registered.contract}@{self.registered.version}"


def stream_of(contract: str) -> str:
    return f"router:{contract}"


class RouterVersions:
    """The versions of each contract's learned router, read from their stream."""

    def __init__(self, store: EventStore) -> None:
        self.store = store

    def _events(self, contract: str) -> tuple[list[RouterVersion], list[RouterPromoted], int]:
        versions, promotions, seq = [], [], 0
        for recorded in self.store.read_stream(stream_of(contract), 0, 100_000):
            event, seq = logged(recorded).event, recorded.stream_seq
            if isinstance(event, RouterRegistered):
                versions.append(RouterVersion(event, recorded.position, recorded.metadata.actor))
            elif isinstance(event, RouterPromoted):
                promotions.append(event)
        return versions, promotions, seq

    def versions(self, contract: str) -> list[RouterVersion]:
        return self._events(contract)[0]

    def production(self, contract: str) -> RouterVersion | None:
        """The version the latest promotion points at (None: none was promoted)."""
        versions, promotions, _ = self._events(contract)
        if not promotions:
            return None
        return next(v for v in versions if v.registered.version == promotions[-1].version)

    def register(self, event: RouterRegistered, actor: str, promote: bool, reason: str) -> RouterVersion:
        """Append the version (numbered next) and, when ``promote``, its promotion; a
        concurrent registration makes the store refuse this one (expected_seq)."""
        versions, promotions, seq = self._events(event.contract)
        event = event.model_copy(update={"version": len(versions) + 1})
        batch = [event.new_event(stream_of(event.contract), EventMetadata(actor=actor), seq)]
        if promote:
            batch.append(RouterPromoted(
                contract=event.contract, version=event.version, reason=reason,
                previous_version=promotions[-1].version if promotions else None,
            ).new_event(stream_of(event.contract), EventMetadata(actor=actor), seq + 1))
        appended = self.store.append(batch)
        return RouterVersion(event, appended[0].event.position, actor)

    def promote(self, contract: str, version: int, actor: str, reason: str) -> RouterPromoted:
        """Point the contract's router at ``version`` (a rollback is a promotion too)."""
        versions, promotions, seq = self._events(contract)
        if not any(v.registered.version == version for v in versions):
            raise RouterNotFound(f"contract '{contract}' has no learned router version {version}")
        moved = RouterPromoted(contract=contract, version=version, reason=reason,
                               previous_version=promotions[-1].version if promotions else None)
        self.store.append([moved.new_event(stream_of(contract), EventMetadata(actor=actor), seq)])
        return moved
