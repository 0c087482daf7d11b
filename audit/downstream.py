"""Downstream of experience: what an event, a session, a tenant or a contract version reached.

The walk is the same for every source: its reward records, the manifests that list
any of them (the manifests' member index), the versions trained on those manifests,
every descendant of those (the ancestry closure: a successor starts from its parent's
weights, so it carries what the parent learnt), and the time windows in which an alias
(production, staging …) served any of them. Each step is one indexed read.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.engine import Connection, Engine

from audit.errors import invalid
from audit.views import (
    AdapterReached,
    DownstreamOut,
    ManifestReached,
    RewardRef,
    RewardsReached,
    SourceOut,
    WindowOut,
)
from contract.versions import ContractVersions
from evaluators.model import RewardRecord
from evaluators.rewards import RewardQuery, RewardStore
from events.store import EventStore
from kernel.errors import NotFound
from trainer.datasets.members import ManifestIndex, Reach
from trainer.registry.aliases import Aliases
from trainer.registry.ancestry import Ancestry

MAX_ITEMS = 1000


class Downstream:
    def __init__(self, engine: Engine, store: EventStore, rewards: RewardStore,
                 contracts: ContractVersions, index: ManifestIndex, ancestry: Ancestry,
                 aliases: Aliases) -> None:
        # One connection, lent by the engine, is shared by every store read of a query.
        self.engine, self.store, self.rewards, self.contracts = engine, store, rewards, contracts
        self.index, self.ancestry, self.aliases = index, ancestry, aliases

    def of_event(self, event_id: str, alias: str | None = None, limit: int = 100) -> DownstreamOut:
        """What one event reached: the rewards of the subjects that hold it, and onwards.

        Raises:
            Invalid: ``event_id`` is not a UUID.  NotFound: no such event.
        """
        try:
            parsed = uuid.UUID(event_id)
        except ValueError:
            raise invalid(f"event_id '{event_id}' is not a UUID", "event_id") from None
        with self.engine.connect() as conn:
            event = self.store.get_many([parsed], conn).get(str(parsed))
            if event is None:
                raise NotFound(f"no event '{event_id}'")
            found = self.rewards.containing_event(event.stream_id, event.position, parsed, conn)
            reached = self.index.holding_rewards((r.reward_id for r in found), conn)
            return self._onwards(SourceOut(kind="event", id=str(parsed)),
                                 _page(len(found), found, limit), reached, alias, conn)

    def of_stream(self, stream_id: str, alias: str | None = None, limit: int = 100,
                  after: int = 0) -> DownstreamOut:
        """What one session (a stream) reached.

        Raises:
            NotFound: the stream has no event.
        """
        if not self.store.read_stream(stream_id, limit=1):
            raise NotFound(f"no stream '{stream_id}'")
        with self.engine.connect() as conn:
            total, page = self.rewards.of_streams([stream_id], after, _cap(limit), conn)
            return self._onwards(SourceOut(kind="stream", id=stream_id), _page(total, page, limit),
                                 self.index.holding_streams([stream_id], conn), alias, conn)

    def of_tenant(self, tenant: str, alias: str | None = None, limit: int = 100,
                  after: int = 0) -> DownstreamOut:
        """What every session of a tenant reached.

        Raises:
            NotFound: no event names the tenant.
        """
        streams = self.store.streams_of_tenant(tenant)
        if not streams:
            raise NotFound(f"no event of tenant '{tenant}'")
        with self.engine.connect() as conn:
            total, page = self.rewards.of_streams(streams, after, _cap(limit), conn)
            return self._onwards(SourceOut(kind="tenant", id=tenant), _page(total, page, limit),
                                 self.index.holding_streams(streams, conn), alias, conn)

    def of_contract_version(self, name: str, version: int, alias: str | None = None,
                            limit: int = 100, after: int = 0) -> DownstreamOut:
        """What the rewards judged by one contract version reached.

        Raises:
            NotFound: no such contract version.
        """
        self.contracts.get(name, version)
        page = self.rewards.find(RewardQuery(contract_name=name, contract_version=version,
                                             after=after, limit=_cap(limit)))
        total = self.rewards.count(name, version)
        with self.engine.connect() as conn:
            return self._onwards(SourceOut(kind="contract_version", id=f"{name}@{version}"),
                                 _page(total, page, limit),
                                 self.index.holding_contract_version(name, version, conn), alias, conn)

    def _onwards(self, source: SourceOut, rewards: RewardsReached, reached: list[Reach],
                 alias: str | None, conn: Connection) -> DownstreamOut:
        manifest_ids = [r.manifest_id for r in reached]
        headers = self.index.headers(manifest_ids, conn)
        trained = self.ancestry.trained_on(manifest_ids, conn)
        nearest = self.ancestry.descendants((a for ids in trained.values() for a in ids), conn)
        versions = self.ancestry.briefs(nearest, conn)
        windows = [w for w in self.aliases.windows(nearest, conn) if alias is None or w.alias == alias]
        return DownstreamOut(
            source=source, rewards=rewards,
            manifests=[ManifestReached(manifest_id=r.manifest_id, specialist=headers[r.manifest_id][0],
                                       content_hash=headers[r.manifest_id][1], members=r.members,
                                       adapters=trained.get(r.manifest_id, []))
                       for r in reached if r.manifest_id in headers],
            adapters=[AdapterReached(adapter_id=a.adapter_id, specialist=a.specialist,
                                     version=a.version, status=a.status,
                                     generations=nearest[a.adapter_id])
                      for a in sorted(versions.values(), key=lambda a: (a.specialist, a.version))],
            windows=[WindowOut(**w.to_json()) for w in windows])


def _cap(limit: int) -> int:
    return max(0, min(limit, MAX_ITEMS))


def _page(total: int, records: Sequence[RewardRecord], limit: int) -> RewardsReached:
    shown = list(records)[:_cap(limit)]
    return RewardsReached(count=total, items=[RewardRef(
        reward_id=str(r.reward_id), position=r.position or 0, subject_id=r.subject_id,
        stream_id=r.stream_id, contract=f"{r.contract_name}@{r.contract_version}",
        score=r.score, split=r.split) for r in shown],
        next_after=shown[-1].position if shown and len(shown) == _cap(limit) < total else None)
