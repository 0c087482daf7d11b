"""The registry's tables as projections of its events, one projector per table.

Every row is what one event makes of it: specialists and base models from their
creation, an adapter version and its contract links and ancestry closure from its
registration, status changes and every alias step from theirs (keyed by the event's
position). The ancestry closure is the one projector that reads earlier rows: a
version's ancestors are its parent's, one deeper.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from events.projections.model import Change, Insert, Projection, ProjectionSet, Row, State, Subset, Unrecorded
from events.server_events import Logged
from trainer.registry.events import (
    AdapterRegistered,
    AdapterStatusChanged,
    AliasMoveApproved,
    AliasMoved,
    AliasMoveRejected,
    AliasMoveRequested,
    AliasProtectionChanged,
    BaseModelRegistered,
    SpecialistCreated,
)
from trainer.registry.tables import (
    adapter_ancestry,
    adapter_contract_versions,
    adapter_status_changes,
    adapter_versions,
    alias_move_decisions,
    alias_move_requests,
    alias_moves,
    alias_protections,
    base_models,
    specialists,
)

# The specialists migration 0003 created before the log began (no event made them); 0015
# fixed their creation time to this constant, so the seed is the same in every database.
SEEDED_AT = datetime(1970, 1, 1, tzinfo=UTC)
SEEDED = (("chat", "Open conversation"), ("agent", "Multi-step tool use"),
          ("coding", "Writing and explaining code"), ("genui", "Generating user-interface descriptions"))


def seeded_specialists() -> list[Row]:
    return [{"name": n, "description": d, "created_by": "migration:0003", "created_at": SEEDED_AT}
            for n, d in SEEDED]


def _specialists(done: Logged[Any], state: State) -> list[Change]:
    e = done.event
    assert isinstance(e, SpecialistCreated)
    return [Insert("specialists", {"name": e.name, "description": e.description,
                                   "created_by": done.actor, "created_at": done.recorded_at})]


def _base_models(done: Logged[Any], state: State) -> list[Change]:
    e = done.event
    assert isinstance(e, BaseModelRegistered)
    return [Insert("base_models", {
        "name": e.name, "path": e.path, "weights_sha256": e.weights_sha256, "config": e.config,
        "registered_by": done.actor, "registered_at": done.recorded_at,
        "event_position": done.position, "source": e.source})]


def _adapter_versions(done: Logged[Any], state: State) -> list[Change]:
    e = done.event
    assert isinstance(e, AdapterRegistered)
    metrics: Any = e.metrics
    if metrics is None:  # v1 recorded only the gate's part of the metrics
        why = "adapter.registered v1 recorded only the gate's verdict of the metrics"
        metrics = Subset({"gate": e.gate}, why) if e.gate is not None else Unrecorded(why)
    uri: Any = e.artifact_uri if e.artifact_uri is not None else Unrecorded(
        "adapter.registered v1 did not record the artifact's URI (its sha256 it did)")
    return [Insert("adapter_versions", {
        "adapter_id": e.adapter_id, "specialist": done.metadata.specialist, "version": e.version,
        "parent_adapter_id": e.parent_adapter_id, "base_model": e.base_model,
        "training_run_id": e.training_run_id, "manifest_id": e.manifest_id, "hyper": e.hyper,
        "metrics": metrics, "artifact_sha256": e.artifact_sha256, "artifact_uri": uri,
        "status": e.status, "registered_by": done.actor, "registered_at": done.recorded_at,
        "event_position": done.position})]


def _adapter_contract_versions(done: Logged[Any], state: State) -> list[Change]:
    e = done.event
    assert isinstance(e, AdapterRegistered)
    return [Insert("adapter_contract_versions", {"adapter_id": e.adapter_id, "contract_name": c.name,
                                                 "contract_version": c.version})
            for c in e.contract_versions]


def _adapter_ancestry(done: Logged[Any], state: State) -> list[Change]:
    e = done.event
    assert isinstance(e, AdapterRegistered)
    above = state.find("adapter_ancestry", descendant_id=e.parent_adapter_id) if e.parent_adapter_id else []
    rows = [{"descendant_id": e.adapter_id, "depth": 0, "ancestor_id": e.adapter_id}]
    rows += [{"descendant_id": e.adapter_id, "depth": r["depth"] + 1, "ancestor_id": r["ancestor_id"]}
             for r in sorted(above, key=lambda r: r["depth"])]
    return [Insert("adapter_ancestry", row) for row in rows]


def _status_changes(done: Logged[Any], state: State) -> list[Change]:
    e = done.event
    assert isinstance(e, AdapterStatusChanged)
    return [Insert("adapter_status_changes", {
        "position": done.position, "adapter_id": e.adapter_id, "status": e.status, "actor": done.actor,
        "reason": e.reason, "changed_at": done.recorded_at})]


def _alias_moves(done: Logged[Any], state: State) -> list[Change]:
    e = done.event
    assert isinstance(e, AliasMoved)
    return [Insert("alias_moves", {
        "position": done.position, "specialist": e.specialist, "alias": e.alias,
        "adapter_id": e.adapter_id, "previous_adapter_id": e.previous_adapter_id, "actor": done.actor,
        "reason": e.reason, "moved_at": done.recorded_at, "kind": e.kind})]


def _alias_protections(done: Logged[Any], state: State) -> list[Change]:
    e = done.event
    assert isinstance(e, AliasProtectionChanged)
    return [Insert("alias_protections", {
        "position": done.position, "specialist": e.specialist, "alias": e.alias,
        "protected": e.protected, "actor": done.actor, "reason": e.reason,
        "changed_at": done.recorded_at})]


def _move_requests(done: Logged[Any], state: State) -> list[Change]:
    e = done.event
    assert isinstance(e, AliasMoveRequested)
    return [Insert("alias_move_requests", {
        "request_id": e.request_id, "position": done.position, "specialist": e.specialist,
        "alias": e.alias, "kind": e.kind, "adapter_id": e.adapter_id,
        "expected_current": e.expected_current, "requested_by": done.actor, "reason": e.reason,
        "requested_at": done.recorded_at})]


def _move_decisions(done: Logged[Any], state: State) -> list[Change]:
    e = done.event
    assert isinstance(e, AliasMoveApproved | AliasMoveRejected)
    decision = "approved" if isinstance(e, AliasMoveApproved) else "rejected"
    return [Insert("alias_move_decisions", {
        "request_id": e.request_id, "position": done.position, "decision": decision,
        "actor": done.actor, "reason": e.reason, "decided_at": done.recorded_at})]


SPECIALISTS = Projection(specialists, (SpecialistCreated,), _specialists, seed=seeded_specialists)
BASE_MODELS = Projection(base_models, (BaseModelRegistered,), _base_models)
ADAPTER_VERSIONS = Projection(adapter_versions, (AdapterRegistered,), _adapter_versions)
ADAPTER_CONTRACT_VERSIONS = Projection(adapter_contract_versions, (AdapterRegistered,),
                                       _adapter_contract_versions)
ADAPTER_ANCESTRY = Projection(adapter_ancestry, (AdapterRegistered,), _adapter_ancestry)
ADAPTER_STATUS_CHANGES = Projection(adapter_status_changes, (AdapterStatusChanged,), _status_changes)
ALIAS_MOVES = Projection(alias_moves, (AliasMoved,), _alias_moves)
ALIAS_PROTECTIONS = Projection(alias_protections, (AliasProtectionChanged,), _alias_protections)
ALIAS_MOVE_REQUESTS = Projection(alias_move_requests, (AliasMoveRequested,), _move_requests)
ALIAS_MOVE_DECISIONS = Projection(alias_move_decisions, (AliasMoveApproved, AliasMoveRejected),
                                  _move_decisions)

SPECIALIST_PROJECTIONS = ProjectionSet(SPECIALISTS, BASE_MODELS)
ADAPTER_PROJECTIONS = ProjectionSet(ADAPTER_VERSIONS, ADAPTER_CONTRACT_VERSIONS, ADAPTER_ANCESTRY,
                                    ADAPTER_STATUS_CHANGES)
ALIAS_PROJECTIONS = ProjectionSet(ALIAS_MOVES, ALIAS_PROTECTIONS, ALIAS_MOVE_REQUESTS,
                                  ALIAS_MOVE_DECISIONS)
REGISTRY_PROJECTIONS = SPECIALIST_PROJECTIONS + ADAPTER_PROJECTIONS + ALIAS_PROJECTIONS
