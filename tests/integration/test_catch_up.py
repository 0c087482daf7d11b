"""A projection added to a server with a log behind it catches up from its stored position,
a page of its own events at a time, resumes where it stopped, and ends as the log says,
whatever the write path projected meanwhile; on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.main import app as cli
from events.checkpoints import Checkpoints
from events.projections.catchup import CaughtUp, position_name
from hcp.settings import get_settings
from tests.integration import audit_world
from tests.integration.audit_world import World
from tests.integration.superuser import as_superuser, sql

world = audit_world.world


class Stop(Exception):
    pass


def stop_after_first(done: CaughtUp) -> None:
    raise Stop  # the machine wanted back after one page


def test_a_new_projection_catches_up_resumes_and_ends_as_the_log_says(world: World) -> None:
    c = world.c
    moves = c.store.of_types(["alias.moved"])
    as_superuser(c.engine, sql("DELETE FROM alias_moves"))  # the new table, as its migration made it
    c.aliases.move("coding", "staging", "coding@1", "tester", "live on the write path already")
    with pytest.raises(Stop):
        c.rebuilder.catch_up("alias_moves", page=1, on_page=stop_after_first)
    first = Checkpoints(c.engine).load(position_name("alias_moves"))
    assert first == moves[0].position  # the first page committed with its position
    done = c.rebuilder.catch_up("alias_moves", page=1)
    assert done.started_at == first and done.events == len(moves)  # the rest, and its own types only
    assert (done.inserted, done.present) == (len(moves) - 1, 1)  # the write path's row left as it is
    assert done.position == c.store.of_types(["alias.moved"])[-1].position
    check = c.rebuilder.check(["alias_moves"])
    assert check.ok, [d.line() for d in check.checks[0].differences]
    assert c.rebuilder.catch_up("alias_moves").events == 0  # at the head: nothing to replay


def test_a_grouped_projection_catches_up_manifest_by_manifest(world: World) -> None:
    c = world.c
    as_superuser(c.engine, sql("DELETE FROM manifest_members"))
    done = c.rebuilder.catch_up("manifest_members")
    assert done.events == len(c.store.of_types(["dataset.frozen"])) and done.present == 0
    assert done.inserted > 0
    check = c.rebuilder.check(["manifest_members"])
    assert check.ok, [d.line() for d in check.checks[0].differences]


@pytest.fixture
def hcp(world: World, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Any]]:
    monkeypatch.setenv("HCP_DATABASE_URL", world.c.settings.database_url)
    monkeypatch.setenv("HCP_DATA_DIR", str(world.c.settings.data_dir))
    monkeypatch.delenv("HCP_KAFKA_BOOTSTRAP", raising=False)
    get_settings.cache_clear()
    yield lambda *args: CliRunner().invoke(cli, list(args))
    get_settings.cache_clear()


def test_the_command_catches_up_one_table_and_refuses_without_one(hcp, world: World) -> None:
    as_superuser(world.c.engine, sql("DELETE FROM alias_moves"))
    done = hcp("rebuild", "--table", "alias_moves", "--catch-up", "--page", "1")
    assert done.exit_code == 0, done.output
    assert "caught up alias_moves from position 0 to " in done.output and "2 row(s) inserted" in done.output
    assert hcp("rebuild", "--table", "alias_moves", "--check").exit_code == 0
    assert hcp("rebuild", "--catch-up").exit_code == 2
    assert hcp("rebuild", "--table", "nope", "--catch-up").exit_code == 2
