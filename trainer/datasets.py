"""Reading reward records and events for manifests, and freezing manifests (SQL side)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.engine import Connection

from contract.subject import Subject
from evaluators.tables import reward_records
from events.catalogue import upcast
from events.model import RecordedEvent
from events.store import event_from_row, upcast_event
from events.tables import events
from trainer.manifest import EventView, Manifest, RewardRow, assemble, manifest_hash, select_rewards
from trainer.model import Conflict, NotFound
from trainer.rollout import JudgedSubject
from trainer.tables import dataset_manifests
from trainer.writes import utcnow

CHUNK = 500  # ids per IN (...) query
T = TypeVar("T")


def eligible_condition(specialist: str, contract: str | None) -> Any:
    condition = ((reward_records.c.specialist == specialist)
                 & reward_records.c.eligible.is_(True)
                 & reward_records.c.error.is_(None)
                 & reward_records.c.score.is_not(None))
    if contract is not None:
        condition = condition & (reward_records.c.contract_name == contract)
    return condition


def eligible_rewards(conn: Connection, specialist: str, contract: str | None,
                     cut_from: int, cut_to: int) -> list[RewardRow]:
    query = (select(reward_records)
             .where(eligible_condition(specialist, contract),
                    reward_records.c.position > cut_from, reward_records.c.position <= cut_to)
             .order_by(reward_records.c.position))
    return [_reward(r) for r in conn.execute(query)]


def rewards_by_ids(conn: Connection, reward_ids: Sequence[str]) -> list[RewardRow]:
    rows: list[RewardRow] = []
    for chunk in _chunks([uuid.UUID(i) for i in reward_ids]):
        rows += [_reward(r) for r in conn.execute(
            select(reward_records).where(reward_records.c.reward_id.in_(chunk)))]
    return sorted(rows, key=lambda r: r.position)


def events_for(conn: Connection, rewards: Iterable[RewardRow]) -> dict[str, EventView]:
    ids = sorted({uuid.UUID(e) for r in rewards for e in r.event_ids})
    found: dict[str, EventView] = {}
    for chunk in _chunks(ids):
        query = select(events.c.event_id, events.c.position, events.c.type,
                       events.c.schema_version, events.c.payload).where(events.c.event_id.in_(chunk))
        for row in conn.execute(query):
            _, payload = upcast(row.type, row.schema_version, row.payload)
            found[str(row.event_id)] = EventView(str(row.event_id), row.position, row.type, payload)
    return found


def freeze_in(conn: Connection, specialist: str, contract: str | None,
              cut_from: int, cut_to: int) -> tuple[str, Manifest]:
    """The manifest of the eligible rewards in (cut_from, cut_to], stored once by content hash.

    Raises:
        Conflict: no reward in the range yields a training example.
    """
    rewards = select_rewards(eligible_rewards(conn, specialist, contract, cut_from, cut_to))
    manifest = assemble(specialist, cut_from, cut_to, rewards, events_for(conn, rewards))
    if not manifest.examples:
        raise Conflict(f"no eligible reward of '{specialist}' in positions "
                       f"({cut_from}, {cut_to}] yields a training example")
    digest = manifest.content_hash
    existing = conn.execute(select(dataset_manifests.c.manifest_id)
                            .where(dataset_manifests.c.content_hash == digest)).scalar()
    if existing is not None:
        return str(existing), manifest
    manifest_id = str(uuid.uuid4())
    conn.execute(dataset_manifests.insert().values(
        manifest_id=manifest_id, specialist=specialist, content_hash=digest,
        reward_ids=list(manifest.reward_ids), subject_event_ids=manifest.subject_event_ids,
        contract_versions=list(manifest.contract_versions), split=manifest.split,
        cut_from=cut_from, cut_to=cut_to, example_count=len(manifest.examples),
        examples_sha256=manifest.examples_sha256, created_at=utcnow()))
    return manifest_id, manifest


def manifest_row(conn: Connection, manifest_id: str) -> Any:
    row = conn.execute(select(dataset_manifests)
                       .where(dataset_manifests.c.manifest_id == manifest_id)).first()
    if row is None:
        raise NotFound(f"no dataset manifest '{manifest_id}'")
    return row


def stored_content(row: Any) -> dict[str, Any]:
    """A stored manifest's hashed content, exactly as ``Manifest.content`` built it."""
    return {"specialist": row.specialist, "cut_from": row.cut_from, "cut_to": row.cut_to,
            "reward_ids": row.reward_ids, "subject_event_ids": row.subject_event_ids,
            "contract_versions": row.contract_versions, "split": row.split,
            "examples_sha256": row.examples_sha256}


def stored_hash_ok(row: Any) -> bool:
    return manifest_hash(stored_content(row)) == row.content_hash


def rebuild(conn: Connection, manifest_id: str) -> Manifest:
    """The examples of a stored manifest, rebuilt from its reward and event ids.

    Raises:
        Conflict: the rebuilt manifest does not hash to the stored one.
    """
    row = manifest_row(conn, manifest_id)
    rewards = rewards_by_ids(conn, row.reward_ids)
    manifest = assemble(row.specialist, row.cut_from, row.cut_to, rewards,
                        events_for(conn, rewards))
    if manifest.content_hash != row.content_hash:
        raise Conflict(f"manifest {manifest_id} no longer rebuilds to its content hash "
                       f"{row.content_hash[:12]}… (got {manifest.content_hash[:12]}…)")
    return manifest


def judged_subjects(conn: Connection, reward_ids: Sequence[str]) -> dict[str, JudgedSubject]:
    """Each reward's subject as the evaluator saw it (full events, upcast), by reward id."""
    rows: list[Any] = []
    for chunk in _chunks([uuid.UUID(i) for i in reward_ids]):
        rows += conn.execute(select(reward_records).where(reward_records.c.reward_id.in_(chunk))).all()
    ids = sorted({uuid.UUID(e) for row in rows for e in row.event_ids})
    found: dict[str, RecordedEvent] = {}
    for chunk in _chunks(ids):
        for event_row in conn.execute(select(events).where(events.c.event_id.in_(chunk))):
            event = upcast_event(event_from_row(event_row._mapping))
            found[str(event.event_id)] = event
    judged: dict[str, JudgedSubject] = {}
    for row in rows:
        subject_events = sorted((found[e] for e in row.event_ids if e in found),
                                key=lambda e: e.stream_seq)
        subject = Subject(row.subject_id, row.subject_kind, row.stream_id, tuple(subject_events))
        judged[str(row.reward_id)] = JudgedSubject(str(row.reward_id), subject, row.contract_name,
                                                   row.contract_version, row.contract_hash)
    return judged


def _reward(row: Any) -> RewardRow:
    return RewardRow(
        reward_id=str(row.reward_id), position=row.position, subject_id=row.subject_id,
        event_ids=tuple(str(e) for e in row.event_ids), contract_name=row.contract_name,
        contract_version=row.contract_version, contract_hash=row.contract_hash,
        score=row.score, components=dict(row.components or {}), split=row.split,
    )


def _chunks(items: Sequence[T]) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), CHUNK):
        yield items[start:start + CHUNK]
