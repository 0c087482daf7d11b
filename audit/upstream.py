"""Upstream of an adapter version: every ancestor to its root, and the exact data of each.

Per version: the run that trained it and the trigger that started the run, the frozen
manifest (hash, counts, contract versions), the contract versions with their hashes,
the base model with its weight hash and the gate's record. The ancestry comes from the
closure table, and every other fact from one batched read per kind, so a chain of 50
costs about ten queries, not 500. ``records`` pages through the reward records and
subject events a version was trained and gated on; ``manifest`` and ``members`` serve
``/v1/manifests``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine

from audit.views import (
    ArtifactOut,
    BaseModelRef,
    ContractVersionRef,
    EventRef,
    ManifestOut,
    ManifestRef,
    MemberOut,
    MembersPage,
    RecordOut,
    RecordsPage,
    RunRef,
    TriggerRef,
    UpstreamOut,
    VersionLineage,
)
from evaluators.rewards import RewardStore
from events.store import EventStore
from kernel.errors import NotFound
from trainer.datasets.manifests import Manifests
from trainer.datasets.members import ManifestIndex, ManifestSummary, Member
from trainer.registry.ancestry import Ancestry
from trainer.registry.model import AdapterVersion, BaseModelEntry
from trainer.registry.registry import Registry
from trainer.runs.model import TrainingRun
from trainer.runs.store import Runs
from trainer.triggers.log import FiringLog
from trainer.triggers.model import Firing

MAX_PAGE = 1000


class Upstream:
    def __init__(self, engine: Engine, ancestry: Ancestry, registry: Registry, index: ManifestIndex,
                 manifests: Manifests, runs: Runs, firings: FiringLog, rewards: RewardStore,
                 store: EventStore) -> None:
        # The engine only lends one connection that every store's read shares: a query is
        # then one checkout, not one per store (each costs a ping and a rollback).
        self.engine, self.ancestry, self.registry, self.index = engine, ancestry, registry, index
        self.manifests, self.runs, self.firings, self.rewards, self.store = (
            manifests, runs, firings, rewards, store)

    def of(self, adapter_id: str) -> UpstreamOut:
        """The version and its ancestors, nearest first.

        Raises:
            NotFound: no such version.
        """
        with self.engine.connect() as conn:
            chain = self.ancestry.ancestors(adapter_id, conn)
            adapters = self.registry.versions(chain, conn)
            runs = self.runs.get_many((a.training_run_id for a in adapters.values()), conn)
            firings = self.firings.by_ids((r.firing_id for r in runs.values()), conn)
            summaries = self.index.summaries((a.manifest_id for a in adapters.values()), conn)
            bases = self.ancestry.base_models((a.base_model for a in adapters.values()), conn)
        versions = []
        for depth, version_id in enumerate(chain):
            adapter = adapters[version_id]
            run = runs.get(adapter.training_run_id)
            versions.append(_version(adapter, depth, run,
                                     firings.get(run.firing_id) if run else None,
                                     summaries.get(adapter.manifest_id),
                                     bases.get(adapter.base_model)))
        return UpstreamOut(adapter_id=adapter_id, root_id=chain[-1], versions=versions)

    def records(self, adapter_id: str, after: int = 0, limit: int = 100,
                split: str | None = None) -> RecordsPage:
        """A page of the rewards (and their subjects' events) the version was trained
        (split ``train``) and gated (``held_out``) on, in reward position order.

        Raises:
            NotFound: no such version.
        """
        adapter = self.registry.adapter(adapter_id)
        with self.engine.connect() as conn:
            summary = self.index.summaries([adapter.manifest_id], conn)[adapter.manifest_id]
            members = self.index.members(adapter.manifest_id, after, min(limit, MAX_PAGE), split, conn)
            rewards = {str(r.reward_id): r
                       for r in self.rewards.by_ids((m.reward_id for m in members), conn)}
            events = self.store.get_many((e for r in rewards.values() for e in r.event_ids), conn)
        records = []
        for member in members:
            reward = rewards[member.reward_id]
            subject = sorted((events[e] for e in reward.event_ids if e in events),
                             key=lambda e: e.stream_seq)
            records.append(RecordOut(member=_member(member), reward=reward.to_json(), events=[
                EventRef(event_id=str(e.event_id), stream_id=e.stream_id, stream_seq=e.stream_seq,
                         position=e.position, type=e.type, recorded_at=e.recorded_at, hash=e.hash)
                for e in subject]))
        total = summary.split.get(split, 0) if split else summary.reward_count
        return RecordsPage(adapter_id=adapter_id, manifest_id=adapter.manifest_id, total=total,
                           records=records, next_after=_next(members, limit))

    def manifest(self, manifest_id: str) -> ManifestOut:
        """A stored manifest: hashes, cut, counts, contract versions, the versions it trained.

        Raises:
            NotFound: no such manifest.
        """
        verified = self.manifests.stored_hash_ok(manifest_id)  # NotFound first
        summary = self.index.summaries([manifest_id])[manifest_id]
        trained = self.ancestry.trained_on([manifest_id]).get(manifest_id, [])
        return ManifestOut(**_manifest(summary).model_dump(), created_at=summary.created_at,
                           verified=verified, adapters=trained)

    def members(self, manifest_id: str, after: int = 0, limit: int = 100,
                split: str | None = None) -> MembersPage:
        """A page of a manifest's members in reward position order.

        Raises:
            NotFound: no such manifest.
        """
        if manifest_id not in self.index.summaries([manifest_id]):
            raise NotFound(f"no dataset manifest '{manifest_id}'")
        members = self.index.members(manifest_id, after, min(limit, MAX_PAGE), split)
        return MembersPage(manifest_id=manifest_id, members=[_member(m) for m in members],
                           next_after=_next(members, limit))


def _version(adapter: AdapterVersion, depth: int, run: TrainingRun | None, firing: Firing | None,
             summary: ManifestSummary | None, base: BaseModelEntry | None) -> VersionLineage:
    gate: Any = adapter.metrics.get("gate")
    return VersionLineage(
        adapter_id=adapter.adapter_id, specialist=adapter.specialist, version=adapter.version,
        depth=depth, parent_adapter_id=adapter.parent_adapter_id, status=adapter.status,
        registered_status=adapter.registered_status, registered_by=adapter.registered_by,
        registered_at=adapter.registered_at,
        artifact=ArtifactOut(sha256=adapter.artifact_sha256, uri=adapter.artifact_uri),
        run=RunRef(run_id=run.run_id, status=run.status, created_by=run.created_by,
                   created_at=run.created_at, started_at=run.started_at,
                   finished_at=run.finished_at, attempts=run.attempts,
                   hyper=run.hyper) if run else None,
        trigger=TriggerRef(firing_id=firing.firing_id, policy=firing.policy, reason=firing.reason,
                           fired_by=firing.fired_by, fired_at=firing.fired_at,
                           dataset_cut=firing.dataset_cut) if firing else None,
        manifest=_manifest(summary) if summary else None,
        contract_versions=[ContractVersionRef(name=c.name, version=c.version,
                                              content_hash=c.content_hash)
                           for c in adapter.contract_versions],
        base_model=BaseModelRef(name=base.name, path=base.path,
                                weights_sha256=base.weights_sha256) if base else None,
        gate=gate if isinstance(gate, dict) else None,
    )


def _manifest(summary: ManifestSummary) -> ManifestRef:
    return ManifestRef(
        manifest_id=summary.manifest_id, specialist=summary.specialist,
        content_hash=summary.content_hash, examples_sha256=summary.examples_sha256,
        cut_from=summary.cut_from, cut_to=summary.cut_to, reward_count=summary.reward_count,
        split=summary.split, contract_versions=[
            ContractVersionRef(name=c["name"], version=c["version"], content_hash=c.get("hash"))
            for c in summary.contract_versions])


def _member(member: Member) -> MemberOut:
    return MemberOut(**member.to_json())


def _next(members: list[Member], limit: int) -> int | None:
    return members[-1].reward_position if members and len(members) >= min(limit, MAX_PAGE) else None
