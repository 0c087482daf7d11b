"""Every projected table, tampered with as only a superuser can (every trigger and foreign
key out of the way): each column of a row changed, the row deleted, a ghost row added.
``hcp audit all`` must exit 1 naming the table and the row, every time; the rebuild then
puts the table back as the log has it, and its check agrees. A dropped table comes back
with ``hcp rebuild``, rows and guard.

One world per backend and module (tests/integration/projection_world.py), repaired by the
rebuild after each case, so the cases stay cheap.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    Uuid,
    and_,
    create_engine,
    delete,
    select,
    text,
    update,
)
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import DBAPIError
from typer.testing import CliRunner

from audit.manifests import audit_manifests, rebuild_manifests
from audit.report import Findings
from audit.sources import Run
from cli.main import app
from events.projections.compare import live_rows
from events.projections.digest import Digester, compared_columns, digestible, live_digests
from events.projections.model import Projection
from events.projections.replay import Replayed, replay, replay_types
from events.projections.sql import bind_row
from events.tables import events as events_table
from hcp import migrate
from hcp.bootstrap import Container
from hcp.projections import PROJECTIONS, replay_sources
from hcp.settings import get_settings
from kernel.db import is_postgres, make_engine
from tests.integration.audit_world import KEY, audited_container
from tests.integration.projection_world import build_projection_world
from trainer.datasets.tables import manifest_members

pytestmark = pytest.mark.slow
TABLES = [p.name for p in PROJECTIONS]
_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Tampered:
    c: Container
    superuser: Engine  # no triggers, no foreign keys: what a superuser can do


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tampered]:
    tmp = tmp_path_factory.mktemp(f"projection-world-{request.param}")
    url, drop = _database(request, tmp)
    key_file = tmp / "checkpoint.key"
    key_file.write_text(KEY.skey() + "\n")
    c = audited_container(url, tmp, key_file)
    build_projection_world(c, tmp)
    patch = pytest.MonkeyPatch()
    for name, value in {"HCP_DATABASE_URL": url, "HCP_DATA_DIR": str(tmp), "HCP_KAFKA_BOOTSTRAP": "",
                        "HCP_REDIS_URL": "", "HCP_CHECKPOINT_KEY_FILE": str(key_file)}.items():
        patch.setenv(name, value)
    get_settings.cache_clear()
    superuser = create_engine(url)  # SQLite: foreign keys off (the driver's default)
    assert hcp("audit", "all").exit_code == 0
    yield Tampered(c, superuser)
    get_settings.cache_clear()
    patch.undo()
    superuser.dispose()
    c.close()
    drop()


def _database(request: pytest.FixtureRequest, tmp: Path) -> tuple[str, Callable[[], None]]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp / 'hcp.sqlite3'}"
        migrate.upgrade(url)
        return url, lambda: None
    admin_url = request.getfixturevalue("postgres_admin_url")
    template = make_url(request.getfixturevalue("postgres_template")).database
    name = f"hcp_tamper_{uuid.uuid4().hex[:10]}"
    admin = make_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name} TEMPLATE {template}"))

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False), drop


def hcp(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


@pytest.mark.parametrize("table", TABLES)
def test_every_change_to_a_projected_row_is_named_and_rebuilt(world: Tampered, table: str) -> None:
    projection = next(p for p in PROJECTIONS if p.name == table)
    row = _a_row_an_event_made(world.c, projection)
    missed, refused = [], []
    for case, changes, named in _cases(projection, row, _others(world.c, projection, row)):
        if not _first_that_applies(world.superuser, changes):
            refused.append(case)  # every value refused by the schema itself: nothing to hide
            continue
        audit = hcp("audit", "all")
        if audit.exit_code != 1 or not any(f"[{table}] {table} {key}:" in audit.output for key in named):
            missed.append(f"{case}: exit {audit.exit_code}; {audit.output[-400:]}")
        world.c.rebuilder.rebuild([table])  # (the command's own run: the dropped table's test)
        assert world.c.rebuilder.check([table]).ok, f"{case}: not rebuilt"
    assert missed == [], "\n".join(missed)
    assert refused == []


# A held projection, and a grouped one whose drop (CASCADE) takes other tables' foreign keys.
@pytest.mark.parametrize("table", ["alias_moves", "dataset_manifests"])
def test_a_dropped_projection_comes_back_exactly(world: Tampered, table: str) -> None:
    projection = next(p for p in PROJECTIONS if p.name == table)
    with world.c.engine.connect() as conn:
        before = live_rows(conn, projection)
    cascade = " CASCADE" if is_postgres(world.superuser) else ""
    _as_superuser(world.superuser, lambda conn: conn.execute(text(f"DROP TABLE {table}{cascade}")))
    checked = hcp("rebuild", "--check")
    assert checked.exit_code == 1 and f"TABLE MISSING {table}" in checked.output
    assert hcp("rebuild").exit_code == 0
    with world.c.engine.connect() as conn:
        assert live_rows(conn, projection) == before
    audit = hcp("audit", "all")
    assert audit.exit_code == 0 and "audit ok" in audit.output
    assert "signatures were not checked" not in audit.output  # the server's own key, by default
    with pytest.raises(DBAPIError), world.c.engine.begin() as conn:  # the append-only guard is back
        conn.execute(text(f"DELETE FROM {table}"))


def test_the_databases_digests_of_untouched_groups_are_the_replays(world: Tampered) -> None:
    """Else every manifest would be read row by row: right, but the slow way."""
    if not is_postgres(world.superuser):
        pytest.skip("SQLite reads each group; only PostgreSQL gives digests")
    for projection in (p for p in PROJECTIONS if p.group is not None):
        replayed = _replayed(world.c, projection)
        rows: dict[Any, list[tuple[Any, ...]]] = {}
        for row in replayed.rows[projection.name].values():
            rows.setdefault(row[projection.group], []).append(
                tuple(row[n] for n in compared_columns(projection)))
        expected = {g: (len(r), Digester(projection)(r)) for g, r in rows.items()}
        with world.c.engine.connect() as conn:
            assert digestible(conn, projection), projection.name
            assert live_digests(conn, projection) == expected, projection.name


def test_manifests_judged_from_their_events_are_judged_as_their_stored_rows(world: Tampered) -> None:
    """``hcp audit all`` rebuilds an unaltered manifest from its dataset.frozen, not its
    row: a subject's answer changed in the log names the same manifests, with the same
    words, as rebuilding every stored row does."""
    src = world.c.auditor.src
    with world.c.engine.connect() as conn:
        reward_id = conn.execute(select(manifest_members.c.reward_id).limit(1)).scalar()
    [record] = world.c.rewards.by_ids([reward_id])
    events = world.c.store.get_many(record.event_ids, raw=True)
    answer = max(events.values(), key=lambda e: e.position)
    altered = {**answer.payload, "text": f"{answer.payload.get('text', '')} (altered)"}
    where = events_table.c.event_id == answer.event_id
    _as_superuser(world.superuser, lambda conn: conn.execute(events_table.update().where(where)
                                                             .values(payload=altered)))
    try:
        [projected] = world.c.rebuilder.check(["dataset_manifests"]).checks
        fired = src.store.of_types(["trigger.fired"])
        by_events, by_rows = (Findings("manifest_examples", "t", "a") for _ in range(2))
        audit_manifests(src, by_events, fired, Run("t", None), projected)
        rebuild_manifests(src, by_rows, src.manifests.scan_stored(), src.store.scan_types(["dataset.frozen"]),
                          fired, Run("t", None))
        assert by_events.mismatches and by_events.checked == by_rows.checked
        assert sorted(map(repr, by_events.mismatches)) == sorted(map(repr, by_rows.mismatches))
    finally:
        _as_superuser(world.superuser, lambda conn: conn.execute(events_table.update().where(where)
                                                                 .values(payload=answer.payload)))


# --- the cases -------------------------------------------------------------------------

Change = Callable[[Connection], Any]


def _cases(projection: Projection, row: dict[str, Any], others: dict[str, list[Any]]
           ) -> Iterator[tuple[str, list[Change], list[str]]]:
    """(what, the changes to try until one applies, the row keys a finding may name): every
    column changed, the row deleted, a ghost row."""
    table, key = projection.table, projection.key_of(row)
    named = [projection.key_text(key)]
    for column in table.columns:
        if column.name in projection.working:
            continue  # not history: see the projection's ``working``
        values = _candidates(column, row[column.name], others[column.name])
        keys = named + [projection.key_text(projection.key_of({**row, column.name: v})) for v in values
                        if column.name in projection.key_columns]
        yield (f"{column.name} changed", [_set(table, projection, key, column.name, v) for v in values], keys)
    where = _where(table, projection, key)
    yield "row deleted", [lambda conn: conn.execute(delete(table).where(where))], named
    ghost = _ghost(projection, row)
    yield "ghost row", [lambda conn: conn.execute(table.insert().values(**bind_row(table, ghost)))], \
        [projection.key_text(projection.key_of(ghost))]


def _first_that_applies(engine: Engine, changes: list[Change]) -> bool:
    for change in changes:
        try:
            _as_superuser(engine, change)
        except DBAPIError:
            continue  # e.g. another row's value where the column is unique
        return True
    return False


def _candidates(column: Any, value: Any, others: list[Any]) -> list[Any]:
    """Another row's value first (a foreign key stays valid), else one of the type's own."""
    return [o for o in others if o != value][:1] + [_mutated(column, value)]


def _mutated(column: Any, value: Any) -> Any:
    kind = column.type
    if isinstance(kind, Uuid):
        return str(uuid.uuid4())
    if isinstance(kind, Boolean):
        return not value
    if isinstance(kind, DateTime):
        return (value or _EPOCH) + timedelta(days=1)
    if isinstance(kind, Float):
        return (value or 0.0) + 0.5
    if isinstance(kind, Integer):
        return (value or 0) + 1
    if isinstance(kind, JSON):
        return [*value, "tampered"] if isinstance(value, list) else {**(value or {}), "tampered": True}
    if isinstance(kind, String | Text):
        text_value = f"{value or ''}~"
        length = getattr(kind, "length", None)
        return text_value[-length:] if length else text_value
    raise AssertionError(f"no mutation for {column.name}: {kind}")


def _ghost(projection: Projection, row: dict[str, Any]) -> dict[str, Any]:
    """The row again under a new key (and new values of its other unique columns)."""
    unique = set(projection.key_columns) | {c.name for c in projection.table.columns if c.unique}
    for constraint in projection.table.constraints:
        if isinstance(constraint, UniqueConstraint):
            unique |= {c.name for c in constraint.columns}
    # Foreign keys are off for the superuser, so a unique column that names another row
    # (a version's run) may name a row that does not exist.
    return {**row, **{name: _mutated(projection.table.c[name], row[name]) for name in unique}}


def _a_row_an_event_made(c: Container, projection: Projection) -> dict[str, Any]:
    replayed_origin = {key: origin for key, origin in _origins(c, projection).items() if origin > 0}
    with c.engine.connect() as conn:
        rows = live_rows(conn, projection)
    chosen = sorted(k for k in rows if k in replayed_origin)
    assert chosen, f"the world has no row of {projection.name} that an event made"
    return rows[chosen[-1]]


def _origins(c: Container, projection: Projection) -> dict[Any, int]:
    replayed = _replayed(c, projection)
    return {key: origin.position for key, origin in replayed.origins[projection.name].items()}


def _replayed(c: Container, projection: Projection) -> Replayed:
    with c.engine.connect() as conn:
        events = c.store.of_types(replay_types(PROJECTIONS, [projection.name]), conn=conn)
        return replay(PROJECTIONS, events, replay_sources(c.rewards)(conn), [projection.name])


def _others(c: Container, projection: Projection, row: dict[str, Any]) -> dict[str, list[Any]]:
    with c.engine.connect() as conn:
        rows = list(live_rows(conn, projection).values())
    return {col.name: sorted({repr(r[col.name]): r[col.name] for r in rows if r[col.name] is not None
                              and r[col.name] != row[col.name]}.values(), key=repr)
            for col in projection.table.columns}


def _set(table: Table, projection: Projection, key: tuple[Any, ...], column: str, value: Any) -> Change:
    return lambda conn: conn.execute(update(table).where(_where(table, projection, key))
                                     .values(**bind_row(table, {column: value})))


def _where(table: Table, projection: Projection, key: tuple[Any, ...]) -> Any:
    bound = bind_row(table, dict(zip(projection.key_columns, key, strict=True)))
    return and_(*(table.c[name] == value for name, value in bound.items()))


def _as_superuser(engine: Engine, change: Change) -> None:
    with engine.begin() as conn:
        if is_postgres(conn):
            conn.execute(text("SET LOCAL session_replication_role = replica"))  # no triggers, no FKs
        else:
            for name in list(conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'trigger'"))
                             .scalars()):
                conn.execute(text(f'DROP TRIGGER "{name}"'))
        change(conn)


