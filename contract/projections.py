"""``contract_versions`` and ``contract_serving_moves`` as projections of ``contract.*``.

A version's row is its stream replayed: created as a draft, its document replaced by
edits, frozen by publishing, ended by retiring. Publishing and retiring name the content
hash the drafts ended at; an event that names another contradicts the log and cannot be
projected. The row's guard (migration 0002) keeps a published document frozen and every
version kept; a rebuild lifts it and puts it back.
"""

from __future__ import annotations

from typing import Any

from contract.events import DraftCreated, DraftEdited, Published, Retired, ServingMoved
from contract.tables import contract_serving_moves, contract_versions
from events.projections.model import (
    Change,
    Guard,
    Insert,
    Near,
    Projection,
    ProjectionError,
    ProjectionSet,
    State,
    Update,
)
from events.server_events import Logged
from kernel.db import PG_REFUSE_FUNCTION

LEGACY_SECONDS = 60.0

_PG_FREEZE = """
CREATE OR REPLACE FUNCTION hcp_freeze_published_contract() RETURNS trigger AS $$
BEGIN
    IF OLD.status <> 'draft' AND (NEW.document IS DISTINCT FROM OLD.document
                                  OR NEW.content_hash IS DISTINCT FROM OLD.content_hash) THEN
        RAISE EXCEPTION 'contract %@% is published: its document is immutable', OLD.name, OLD.version
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
"""


def _guard_ddl(table: str, dialect: str) -> list[str]:
    if dialect == "postgresql":
        return [_PG_FREEZE, PG_REFUSE_FUNCTION,
                f"CREATE TRIGGER {table}_frozen BEFORE UPDATE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION hcp_freeze_published_contract()",
                f"CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION hcp_refuse_change()"]
    return [f"CREATE TRIGGER {table}_frozen BEFORE UPDATE OF document, content_hash ON {table} "
            "WHEN OLD.status <> 'draft' BEGIN SELECT RAISE(ABORT, 'contract version is published: "
            "its document is immutable'); END",
            f"CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table} BEGIN SELECT RAISE(ABORT, "
            f"'table {table} keeps every version: DELETE is not allowed'); END"]


FROZEN_AND_KEPT = Guard(_guard_ddl, lambda table, dialect: [f"{table}_frozen", f"{table}_no_delete"])


def _time(done: Logged[Any]) -> Any:
    if done.stored_version >= 2:
        return done.recorded_at
    return Near(done.recorded_at, LEGACY_SECONDS, f"{done.type} v1 stamped the row from the writer's clock")


def _versions(done: Logged[Any], state: State) -> list[Change]:
    e, at = done.event, _time(done)
    if isinstance(e, DraftCreated):
        return [Insert("contract_versions", {
            "name": e.name, "version": e.version, "parent_version": e.parent_version,
            "status": "draft", "document": e.document, "content_hash": e.content_hash,
            "created_by": done.actor, "created_at": at, "updated_at": at, "published_at": None,
            "published_by": None, "retired_at": None, "last_event_position": done.position})]
    key, moved = (e.name, e.version), {"updated_at": at, "last_event_position": done.position}
    if isinstance(e, DraftEdited):
        return [Update("contract_versions", key, {**moved, "document": e.document,
                                                  "content_hash": e.content_hash})]
    assert isinstance(e, Published | Retired)
    rows = state.find("contract_versions", name=e.name, version=e.version)
    if rows and rows[0]["content_hash"] != e.content_hash:
        raise ProjectionError(f"it names content hash {e.content_hash[:12]}…, the drafts of "
                              f"{e.name}@{e.version} ended at {rows[0]['content_hash'][:12]}…")
    if isinstance(e, Published):
        return [Update("contract_versions", key, {**moved, "status": "published", "published_at": at,
                                                  "published_by": done.actor})]
    return [Update("contract_versions", key, {**moved, "status": "retired", "retired_at": at})]


def _serving_moves(done: Logged[Any], state: State) -> list[Change]:
    e = done.event
    assert isinstance(e, ServingMoved)
    return [Insert("contract_serving_moves", {
        "position": done.position, "name": e.name, "specialist": e.specialist, "version": e.version,
        "previous_version": e.previous_version, "actor": done.actor, "reason": e.reason,
        "moved_at": done.recorded_at})]


CONTRACT_VERSIONS = Projection(contract_versions, (DraftCreated, DraftEdited, Published, Retired),
                               _versions, guard=FROZEN_AND_KEPT)
CONTRACT_SERVING_MOVES = Projection(contract_serving_moves, (ServingMoved,), _serving_moves)
CONTRACT_PROJECTIONS = ProjectionSet(CONTRACT_VERSIONS, CONTRACT_SERVING_MOVES)
