"""A grouped projection (a manifest's members) checked one event's rows at a time reports
exactly what the same table replayed whole and compared row by row reports: every
differing, missing and ghost row, a manifest frozen twice, a table dropped. Once reading
each group (SQLite's way) and once through group digests (PostgreSQL's way, the
database's digests stood in for by the same digest of the live rows)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import JSON, create_engine, text
from sqlalchemy.engine import Connection, Engine

import events.projections.grouped as grouped
import events.projections.rebuild as rebuild
from evaluators.model import EVALUATOR_VERSION, RewardRecord
from events.memory_store import InMemoryEventStore
from events.model import EventMetadata
from events.projections.compare import check_table, live_rows, scan_live
from events.projections.digest import Digester, compared_columns
from events.projections.model import Projection
from events.projections.rebuild import Rebuilder
from events.projections.replay import replay
from events.projections.sql import bind_row
from kernel.db import metadata
from migrations.schema import load_all_tables
from trainer.datasets.events import DatasetFrozen
from trainer.datasets.manifest import manifest_hash
from trainer.datasets.projections import DATASET_PROJECTIONS, REWARDS, manifest_content
from trainer.datasets.tables import dataset_manifests, manifest_contract_versions, manifest_members

TABLES = [p.name for p in DATASET_PROJECTIONS]


def reward(position: int, split: str) -> RewardRecord:
    subject = f"turn:s{position}:2"
    return RewardRecord(
        reward_id=uuid.uuid4(), subject_id=subject, subject_kind="turn", stream_id=f"s{position}",
        first_position=1, last_position=2, event_ids=(str(uuid.uuid4()), str(uuid.uuid4())),
        contract_name="default", contract_version=1 + position % 2, contract_hash=f"h{position % 2}",
        evaluator_version=EVALUATOR_VERSION, score=0.5, components={}, gates={}, split=split,
        specialist="coding", adapter_version=None, eligible=True, position=position)


REWARD_LIST = [reward(p, "held_out" if p % 3 == 0 else "train") for p in range(1, 13)]
BY_ID = {str(r.reward_id): r for r in REWARD_LIST}


def frozen(manifest_id: str, rewards: list[RewardRecord]) -> DatasetFrozen:
    event = DatasetFrozen(manifest_id=manifest_id, specialist="coding", cut_from=0, cut_to=12,
                          reward_ids=[str(r.reward_id) for r in rewards], examples_sha256="e" * 64,
                          content_hash="", frozen_at=datetime(2026, 1, 1, tzinfo=UTC).isoformat())
    return event.model_copy(update={"content_hash": manifest_hash(manifest_content(event, rewards))})


@pytest.fixture
def world() -> Iterator[tuple[Engine, InMemoryEventStore]]:
    engine = create_engine("sqlite://")
    load_all_tables()  # the foreign keys' tables
    metadata.create_all(engine, tables=[metadata.tables["specialists"], dataset_manifests, manifest_members,
                                        manifest_contract_versions])
    store = InMemoryEventStore()
    for manifest_id, rewards in (("m1", REWARD_LIST[:5]), ("m2", REWARD_LIST[3:9]), ("m3", REWARD_LIST[6:])):
        store.append([frozen(manifest_id, rewards).new_event("specialist:coding", EventMetadata(actor="t"))])
    with engine.begin() as conn:
        made = replay(DATASET_PROJECTIONS, store.of_types(["dataset.frozen"]), sources(conn))
        for p in DATASET_PROJECTIONS:
            for row in made.rows[p.name].values():
                conn.execute(p.table.insert().values(**bind_row(p.table, row)))
    yield engine, store
    engine.dispose()


def sources(conn: Connection) -> dict[str, Any]:
    return {REWARDS: lambda ids: BY_ID}


def by_table(engine: Engine, store: InMemoryEventStore) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """Each table's differences, grouped one event at a time and replayed whole."""
    checked = Rebuilder(engine, store, DATASET_PROJECTIONS, sources).check()
    grouped_found = {c.table: sorted(_seen(c.differences)) for c in checked.checks}
    with engine.connect() as conn:
        whole = replay(DATASET_PROJECTIONS, store.of_types(["dataset.frozen"]), sources(conn))
        held = {p.name: sorted(_seen(check_table(p, whole, _live(conn, p)).differences))
                for p in DATASET_PROJECTIONS}
    return grouped_found, held


def _live(conn: Connection, projection: Projection) -> dict[Any, Any] | None:
    exists = conn.execute(text("SELECT 1 FROM sqlite_master WHERE name = :n"), {"n": projection.name}).first()
    return live_rows(conn, projection) if exists else None


def _seen(differences: list[Any]) -> list[tuple[str, str, str, int | None]]:
    return [(d.kind, d.row, d.detail, d.position) for d in differences]


@pytest.fixture(params=["read", "digest"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "digest":
        class Digests:
            """The database's digests, as the same digest of the live rows (SQLite has none)."""

            def __init__(self, engine: Engine, conn: Connection, wanted: Any) -> None:
                self.found = {name: self.digests(conn, p) for name, (p, _) in wanted.items()}

            def of(self, table: str) -> Any:
                return lambda: self.found[table]

            @staticmethod
            def digests(conn: Connection, projection: Projection) -> dict[Any, Any]:
                rows: dict[Any, list[tuple[Any, ...]]] = {}
                for row in scan_live(conn, projection):
                    rows.setdefault(row[projection.group or ""], []).append(
                        tuple(row[n] for n in compared_columns(projection)))
                return {g: (len(r), Digester(projection)(r) or "") for g, r in rows.items()}

        monkeypatch.setattr(rebuild, "digestible", lambda conn, projection: True)
        monkeypatch.setattr(rebuild, "Background", Digests)
    return str(request.param)


def test_an_untouched_table_agrees(world: tuple[Engine, InMemoryEventStore], way: str,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[str] = []
    group_of = grouped.GroupedCheck._live_group

    def reading(check: grouped.GroupedCheck, group: Any) -> list[Any]:
        read.append(check.projection.name)
        return group_of(check, group)

    monkeypatch.setattr(grouped.GroupedCheck, "_live_group", reading)
    checked = Rebuilder(*world, DATASET_PROJECTIONS, sources).check()
    assert checked.ok and sum(c.rows for c in checked.checks) == 3 + (5 + 6 + 6) + 3 * 2
    assert sorted(set(read)) == ([] if way == "digest" else sorted(TABLES))  # digests agree: nothing read


def test_altered_missing_and_ghost_rows_are_named_as_a_whole_replay_names_them(
        world: tuple[Engine, InMemoryEventStore], way: str) -> None:
    engine, store = world
    with engine.begin() as conn:
        conn.execute(text("UPDATE manifest_members SET split = 'x' "
                          "WHERE manifest_id = 'm2' AND reward_position = 4"))
        conn.execute(text("DELETE FROM manifest_members WHERE manifest_id = 'm3' AND reward_position = 9"))
        conn.execute(text("INSERT INTO manifest_members VALUES ('m1', 99, :r, 'ghost', 'g', 'train')"),
                     {"r": uuid.uuid4().hex})
        conn.execute(text("INSERT INTO manifest_members VALUES ('m9', 1, :r, 'ghost', 'g', 'train')"),
                     {"r": uuid.uuid4().hex})
        conn.execute(text("UPDATE manifest_contract_versions SET reward_count = 7 WHERE manifest_id = 'm1'"))
        conn.execute(text("UPDATE dataset_manifests SET reward_ids = '[]' WHERE manifest_id = 'm3'"))
    found, held = by_table(engine, store)
    assert found == held
    assert [k for k, *_ in found["manifest_members"]].count("extra") == 2
    named = [(kind, row) for kind, row, *_ in found["manifest_members"]]
    assert ("differs", "manifest_id=m2, reward_position=4") in named


def test_a_manifest_frozen_twice_is_created_again_row_by_row(
        world: tuple[Engine, InMemoryEventStore], way: str) -> None:
    engine, store = world
    store.append([frozen("m1", REWARD_LIST[2:7]).new_event("specialist:coding", EventMetadata(actor="t"))])
    found, held = by_table(engine, store)
    assert found == held
    assert any(k == "unprojectable" and "again" in d for k, _, d, _ in found["manifest_members"])


def test_a_dropped_table_is_missing_and_its_events_problems_still_named(
        world: tuple[Engine, InMemoryEventStore], way: str) -> None:
    engine, store = world
    store.append([frozen("m4", REWARD_LIST[:2]).model_copy(update={"content_hash": "f" * 64})
                 .new_event("specialist:coding", EventMetadata(actor="t"))])
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE dataset_manifests"))
    found, held = by_table(engine, store)
    assert found == held
    assert [k for k, *_ in found["dataset_manifests"]] == ["table missing", "unprojectable"]  # (sorted)


def test_a_manifest_rows_json_values_are_jsons_own(world: tuple[Engine, InMemoryEventStore]) -> None:
    """What a digest of a JSON column relies on: the value reads back from its JSON as it is."""
    engine, store = world
    with engine.connect() as conn:
        rows = replay(DATASET_PROJECTIONS, store.of_types(["dataset.frozen"]), sources(conn)).rows
    for projection in DATASET_PROJECTIONS:
        for column in projection.table.columns:
            if isinstance(column.type, JSON):
                for row in rows[projection.name].values():
                    assert json.loads(json.dumps(row[column.name])) == row[column.name]
