"""The audit re-derived from the log: an honest world passes, and each way a superuser can
rewrite history (triggers out of the way) is named, by ``audit all`` and by the audit of
the adapter that relies on it."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Connection

from audit.report import AuditReport
from events.tables import events as events_table
from tests.integration import audit_world
from tests.integration.audit_world import World
from tests.integration.superuser import as_superuser, sql
from trainer.datasets.tables import dataset_manifests

world = audit_world.world


def mismatch_lines(report: AuditReport) -> list[str]:
    return [m.line() for m in report.mismatches]


def test_an_honest_world_passes_both_audits(world: World) -> None:
    everything = world.c.auditor.everything()
    assert everything.ok, mismatch_lines(everything)
    checked = {c.name: c.checked for c in everything.checks}
    assert checked["adapter_versions"] == 2 and checked["reward_records"] >= 16
    assert checked["alias_moves"] == 2 and checked["training_runs"] == 2
    assert checked["contract_serving_moves"] >= 1
    adapter = world.c.auditor.adapter("coding@2")
    assert adapter.ok, mismatch_lines(adapter)
    assert adapter.scope == "adapter coding@2 (2 versions)"
    assert {c.name for c in adapter.checks} >= {
        "contract_versions", "contract_serving_moves", "reward_records", "dataset_manifests",
        "adapter_versions", "alias_moves", "trigger_firings", "training_runs", "artifacts", "event_log"}


def manifest_of(world: World, adapter_id: str) -> str:
    return world.c.registry.adapter(adapter_id).manifest_id


def used_reward(world: World) -> Any:
    row = world.c.manifests.row(manifest_of(world, "coding@2"))
    return next(r for r in world.rewards if str(r.reward_id) == row.reward_ids[0])


def change_contract_text(world: World) -> tuple[Callable[[Connection], Any] | None, str, str]:
    return (sql("UPDATE contract_versions SET document = document || '\n# edited' "
                "WHERE name = 'default' AND version = 1"), "contract_versions",
            "contract_versions name=default, version=1")


def change_parent(world: World) -> tuple[Callable[[Connection], Any] | None, str, str]:
    return (sql("UPDATE adapter_versions SET parent_adapter_id = NULL WHERE adapter_id = 'coding@2'"),
            "adapter_versions", "adapter_versions adapter_id=coding@2")


def change_alias_move(world: World) -> tuple[Callable[[Connection], Any] | None, str, str]:
    latest = world.c.aliases.history("coding", "production")[0]
    return (sql("UPDATE alias_moves SET adapter_id = 'coding@1' WHERE position = :p", p=latest.position),
            "alias_moves", f"alias_moves position={latest.position}")


def change_serving_move(world: World) -> tuple[Callable[[Connection], Any] | None, str, str]:
    first = world.c.serving.history("default")[-1]
    return (sql("UPDATE contract_serving_moves SET reason = 'nothing to see' WHERE position = :p",
                p=first.position),
            "contract_serving_moves", f"contract_serving_moves position={first.position}")


def change_reward_score(world: World) -> tuple[Callable[[Connection], Any] | None, str, str]:
    reward = used_reward(world)
    return (sql("UPDATE reward_records SET score = 0.0 WHERE position = :p", p=reward.position),
            "reward_records", f"reward {reward.reward_id}")


def change_manifest_member(world: World) -> tuple[Callable[[Connection], Any] | None, str, str]:
    manifest_id = manifest_of(world, "coding@2")
    row = world.c.manifests.row(manifest_id)
    swapped = [str(world.rewards[-1].reward_id) if i == 0 else r for i, r in enumerate(row.reward_ids)]

    def change(conn: Connection) -> None:
        conn.execute(dataset_manifests.update().where(dataset_manifests.c.manifest_id == manifest_id)
                     .values(reward_ids=swapped))
    return change, "dataset_manifests", f"dataset_manifests manifest_id={manifest_id}"


def change_artifact_byte(world: World) -> tuple[Callable[[Connection], Any] | None, str, str]:
    sha = world.c.registry.adapter("coding@2").artifact_sha256
    path = Path(world.c.settings.resolved_artifact_dir) / sha[:2] / sha / "adapter_model.safetensors"
    os.chmod(path, 0o644)
    data = bytearray(path.read_bytes())
    data[0] ^= 0x01
    path.write_bytes(bytes(data))
    return None, "artifacts", "coding@2"


def change_middle_event(world: World) -> tuple[Callable[[Connection], Any] | None, str, str]:
    position = used_reward(world).first_position

    def change(conn: Connection) -> None:
        conn.execute(events_table.update().where(events_table.c.position == position)
                     .values(payload={"text": "something the user never said"}))
    return change, "event_log", f"event {position}"


def delete_newest_events(world: World) -> tuple[Callable[[Connection], Any] | None, str, str]:
    latest = world.c.checkpoint_store.latest()
    assert latest is not None
    size = latest.checkpoint.size
    return (sql("DELETE FROM events WHERE position > :p", p=size - 2), "event_log",
            f"checkpoint {latest.position} (size {size})")


CASES = {
    "a published contract's text": change_contract_text,
    "an adapter's parent": change_parent,
    "an alias move": change_alias_move,
    "a contract serving move": change_serving_move,
    "a reward score": change_reward_score,
    "a manifest member": change_manifest_member,
    "an artifact byte": change_artifact_byte,
    "an event in the middle": change_middle_event,
    "the newest events deleted": delete_newest_events,
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_tampering_is_named_by_both_audits(case: str, world: World) -> None:
    change, check, subject = CASES[case](world)
    if change is not None:
        as_superuser(world.c.engine, change)
    for report in (world.c.auditor.everything(), world.c.auditor.adapter("coding@2")):
        assert not report.ok
        named = [m for m in report.mismatches if m.check == check and m.subject.startswith(subject)]
        assert named, f"{report.scope}: {subject} not named by {check}; got {mismatch_lines(report)}"


def test_the_ancestry_follows_the_logged_parent_when_the_row_lies(world: World) -> None:
    as_superuser(world.c.engine, sql("UPDATE adapter_versions SET parent_adapter_id = NULL "
                                     "WHERE adapter_id = 'coding@2'"))
    report = world.c.auditor.adapter("coding@2")
    assert report.scope == "adapter coding@2 (2 versions)"


def test_an_unknown_adapter_is_not_found(world: World) -> None:
    from kernel.errors import NotFound

    with pytest.raises(NotFound):
        world.c.auditor.adapter("coding@9")
    with world.c.engine.connect() as conn:
        assert conn.execute(select(events_table.c.position)).first() is not None


def test_approvals_of_a_protected_alias_are_audited(world: World) -> None:
    c = world.c
    c.approvals.protect("coding", "staging", True, "ann", "two people move staging")
    asked = c.approvals.request("coding", "staging", "coding@1", "ann", "try the first")
    move = c.approvals.approve(asked.request_id, "bob", "looked at it")
    c.checkpoint_signer.sign()
    for report in (c.auditor.everything(), c.auditor.adapter("coding@2")):
        assert report.ok, mismatch_lines(report)
        assert {ch.name: ch.checked for ch in report.checks}["alias_approvals"] == 3

    # The approver rewritten to be the requester: the row no longer matches its event.
    decision = c.store.read_stream("specialist:coding", limit=1000)[-2]
    assert decision.type == "alias.move_approved"
    as_superuser(c.engine, sql("UPDATE alias_move_decisions SET actor = 'ann' WHERE request_id = :r",
                               r=asked.request_id))
    # And the protection's row deleted, to make the alias look as if it never needed approval.
    as_superuser(c.engine, sql("DELETE FROM alias_protections WHERE alias = 'staging'"))
    for report in (c.auditor.everything(), c.auditor.adapter("coding@2")):
        named = {(m.check, m.subject) for m in report.mismatches}
        assert ("alias_move_decisions", f"alias_move_decisions request_id={asked.request_id}") in named, \
            mismatch_lines(report)
        assert any(check == "alias_protections" and "missing" in m.message
                   for m in report.mismatches for check in [m.check])
    assert move.position == decision.position + 1
