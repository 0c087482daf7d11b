"""Lineage queries on SQLite and PostgreSQL: upstream, records, manifests, downstream, as-of,
and the index tables (written by the writers, rebuilt alike by the data migration)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from alembic import command
from sqlalchemy import select
from sqlalchemy.exc import DatabaseError

from hcp import migrate
from kernel.errors import Invalid, NotFound
from tests.integration.lineage_scenario import build
from tests.unit.trainer_core import fixtures
from trainer.datasets.tables import manifest_contract_versions, manifest_members
from trainer.registry.tables import adapter_ancestry

container, parts, recorder = fixtures.container, fixtures.parts, fixtures.recorder


@pytest.fixture
def history(parts, tmp_path):
    return build(parts, tmp_path)


def test_upstream_lists_every_ancestor_with_what_made_it(parts, history):
    up = parts.upstream.of("coding@2")
    assert [v.adapter_id for v in up.versions] == ["coding@2", "coding@1"] and up.root_id == "coding@1"
    successor, root = up.versions
    assert (successor.depth, root.depth) == (0, 1)
    assert (successor.parent_adapter_id, root.parent_adapter_id) == ("coding@1", None)
    assert successor.run.run_id == history.successor.training_run_id and successor.run.status == "succeeded"
    assert successor.trigger.policy == "count" and root.trigger.policy == "manual"
    assert root.trigger.fired_by == "alice" and root.trigger.reason == "first version"
    assert (root.manifest.reward_count, root.manifest.split) == (12, {"train": 8, "held_out": 4})
    # A successor trains on what came since its parent, but is gated on the whole held-out
    # set up to its cut (its 1 new held-out reward and the root's 4).
    assert (successor.manifest.reward_count, successor.manifest.split) == (9, {"train": 4, "held_out": 5})
    assert successor.manifest.cut_from == root.manifest.cut_to == 12
    assert [(c.name, c.version, c.content_hash) for c in successor.contract_versions] == [
        ("default", 1, history.contract_hash)]
    assert successor.manifest.contract_versions[0].content_hash == history.contract_hash
    base = parts.registry.base_model("tiny")
    assert successor.base_model.weights_sha256 == base.weights_sha256
    assert successor.base_model.path == base.path
    assert successor.gate == {"promote": True, "reason": "fake gate"}
    assert successor.artifact.sha256 == history.successor.artifact_sha256
    with pytest.raises(NotFound):
        parts.upstream.of("coding@9")


def test_records_page_through_the_exact_rewards_and_events(parts, history):
    first = parts.upstream.records("coding@1", limit=5)
    assert first.total == 12 and len(first.records) == 5 and first.next_after is not None
    rest = parts.upstream.records("coding@1", after=first.next_after, limit=100)
    assert rest.next_after is None
    ids = [r.member.reward_id for r in first.records + rest.records]
    assert ids == [r["reward_id"] for r in history.first]
    record = first.records[0]
    assert record.reward["reward_id"] == record.member.reward_id
    assert [e.event_id for e in record.events] == history.first[0]["event_ids"]
    assert [e.type for e in record.events] == ["turn.user", "turn.assistant"]
    held = parts.upstream.records("coding@1", split="held_out")
    assert held.total == 4 and {r.member.split for r in held.records} == {"held_out"}


def test_manifest_and_its_members(parts, history):
    found = parts.upstream.manifest(history.root.manifest_id)
    assert found.verified and found.adapters == ["coding@1"] and found.reward_count == 12
    page = parts.upstream.members(history.root.manifest_id, limit=10)
    assert len(page.members) == 10 and page.next_after == page.members[-1].reward_position
    assert page.members[0].stream_id == history.first[0]["stream"]
    with pytest.raises(NotFound):
        parts.upstream.manifest("nope")
    with pytest.raises(NotFound):
        parts.upstream.members("nope")


def test_an_early_event_reaches_the_root_and_through_it_the_successor(parts, history):
    event_id = history.first[0]["event_ids"][0]
    found = parts.downstream.of_event(event_id)
    assert [r.reward_id for r in found.rewards.items] == [history.first[0]["reward_id"]]
    assert [(m.manifest_id, m.members, m.adapters) for m in found.manifests] == [
        (history.root.manifest_id, 1, ["coding@1"])]
    assert [(a.adapter_id, a.generations) for a in found.adapters] == [("coding@1", 0), ("coding@2", 1)]
    windows = [(w.adapter_id, w.since, w.until) for w in found.windows]
    assert windows == [("coding@1", history.moves[0].moved_at, history.moves[1].moved_at),
                       ("coding@2", history.moves[1].moved_at, None)]
    assert parts.downstream.of_event(event_id, alias="staging").windows == []


def test_a_late_event_reaches_only_the_successor(parts, history):
    found = parts.downstream.of_event(history.later[1]["event_ids"][1])
    assert [a.adapter_id for a in found.adapters] == ["coding@2"]
    assert [w.adapter_id for w in found.windows] == ["coding@2"]
    with pytest.raises(Invalid) as refused:
        parts.downstream.of_event("not-a-uuid")
    assert refused.value.field == "event_id"
    with pytest.raises(NotFound):
        parts.downstream.of_event("00000000-0000-0000-0000-000000000000")


def test_a_session_a_tenant_and_a_contract_version_downstream(parts, history):
    session = parts.downstream.of_stream(history.first[3]["stream"])
    assert session.rewards.count == 1 and [a.adapter_id for a in session.adapters] == ["coding@1", "coding@2"]
    tenant = parts.downstream.of_tenant("acme")
    assert tenant.rewards.count == 1 and [a.adapter_id for a in tenant.adapters] == ["coding@2"]
    version = parts.downstream.of_contract_version("default", 1, limit=3)
    assert version.rewards.count == 17 and len(version.rewards.items) == 3
    assert version.rewards.next_after == version.rewards.items[-1].position
    assert {(m.manifest_id, m.members) for m in version.manifests} == {
        (history.root.manifest_id, 12), (history.successor.manifest_id, 9)}
    assert [a.adapter_id for a in version.adapters] == ["coding@1", "coding@2"]
    for missing in (lambda: parts.downstream.of_stream("no-such-stream"),
                    lambda: parts.downstream.of_tenant("nobody"),
                    lambda: parts.downstream.of_contract_version("default", 9)):
        with pytest.raises(NotFound):
            missing()


def test_as_of_names_alias_targets_and_active_contracts(parts, history):
    before, between = history.moves[0].moved_at - timedelta(seconds=1), history.moves[1].moved_at
    assert parts.as_of.at(before).aliases == []
    at_first = parts.as_of.at(history.moves[0].moved_at)
    assert [(a.specialist, a.alias, a.adapter_id) for a in at_first.aliases] == [
        ("coding", "production", "coding@1")]
    assert [(c.name, c.version) for c in at_first.contracts] == [("default", 1)]
    assert parts.as_of.at(between).aliases[0].adapter_id == "coding@2"
    assert parts.as_of.at(between).contracts[0].content_hash == history.contract_hash
    # The scenario's version is a seeded row with no contract.published event, so once it
    # is retired the log says it never scored (test_past_times.py: a version published
    # and retired through the log).
    parts.contracts.retire("default", 1, "tester")
    assert parts.as_of.at(history.moves[1].moved_at + timedelta(days=1)).contracts == []


def test_index_tables_are_append_only(parts, history):
    for table in (manifest_members, manifest_contract_versions, adapter_ancestry):
        with pytest.raises(DatabaseError), parts.engine.begin() as conn:
            conn.execute(table.delete())


def test_the_data_migration_rebuilds_what_the_writers_wrote(parts, history, database_url):
    def snapshot():
        with parts.engine.connect() as conn:
            return {t.name: sorted(tuple(map(str, r)) for r in conn.execute(select(t)))
                    for t in (manifest_members, manifest_contract_versions, adapter_ancestry)}

    written = snapshot()
    assert len(written["manifest_members"]) == 21 and len(written["adapter_ancestry"]) == 3
    parts.engine.dispose()
    command.downgrade(migrate.alembic_config(database_url), "0004")
    migrate.upgrade(database_url)
    assert snapshot() == written
