"""`hcp audit all --since-checkpoint`: the audit from a signed checkpoint names what was
appended after it and tampered with, an older row its sample covers, and a checkpoint
whose signature or consistency fails; on SQLite and PostgreSQL alike."""

from __future__ import annotations

import base64
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from audit.checks.since import Base
from audit.incremental import latest_base
from audit.merkle import range_nodes
from audit.report import AuditReport
from events.chain import chain_hash, payload_digest
from events.model import RecordedEvent
from events.projections.window import Window
from events.sql_rows import event_from_row
from events.tables import events as events_table
from tests.integration import audit_world
from tests.integration.audit_world import World, record_rewards
from tests.integration.superuser import as_superuser, sql

world = audit_world.world


def since(world: World, sample: int = 100, seed: str = "seed-1", base: Base | None = None) -> AuditReport:
    base = base or latest_base(world.c.checkpoint_store)
    return world.c.auditor.since(base, Window(base.size, sample, seed))


def lines(report: AuditReport) -> list[str]:
    return [m.line() for m in report.mismatches]


def grow(world: World) -> int:
    """New experience and a new version of the registry after the checkpoint; returns the
    checkpoint's size."""
    size = world.c.checkpoint_store.latest().checkpoint.size  # type: ignore[union-attr]
    record_rewards(world.c, world.contract_hash, 4, "after")
    world.c.aliases.move("coding", "staging", "coding@1", "tester", "try the first")
    world.c.tree_builder.build()  # what the relay keeps doing in service
    return size


def test_an_honest_log_passes_and_the_report_says_what_it_covered(world: World) -> None:
    size = grow(world)
    report = since(world)
    assert report.ok, lines(report)
    head = world.c.store.head()
    assert report.coverage["kind"] == "incremental"
    assert report.coverage["rehashed"] == [size + 1, head]
    assert report.coverage["sample"] == 100 and report.coverage["seed"] == "seed-1"
    checked = {c.name: c.checked for c in report.checks}
    assert checked["event_log"] >= head - size  # every new event, the proof, the samples
    assert report.scope.startswith("all since checkpoint ")
    moves = next(c for c in report.checks if c.name == "alias_moves")
    assert "compared 1 row(s) written after position" in moves.notes[0], moves.notes
    again = since(world)
    assert again.coverage["samples"] == report.coverage["samples"]  # the same seed, the same rows


def rewrite(conn: Connection, position: int, payload: dict[str, Any], rechain: bool) -> None:
    """The event at ``position`` given ``payload``; with ``rechain``, its digest, its hash
    and every later hash recomputed, as a forger who knows the chain would."""
    e = events_table.c
    if not rechain:
        conn.execute(events_table.update().where(e.position == position).values(payload=payload))
        return
    conn.execute(events_table.update().where(e.position == position).values(
        payload=payload, payload_digest=payload_digest(payload)))
    prev = conn.execute(select(e.hash).where(e.position == position - 1)).scalar_one()
    for row in conn.execute(select(events_table).where(e.position >= position).order_by(e.position)).all():
        event: RecordedEvent = event_from_row(row._mapping)
        new_hash = chain_hash(prev, event)
        conn.execute(events_table.update().where(e.position == event.position)
                     .values(prev_hash=prev, hash=new_hash))
        prev = new_hash


def test_a_tampered_event_appended_after_the_checkpoint_is_named(world: World) -> None:
    size = grow(world)
    as_superuser(world.c.engine, lambda conn: rewrite(conn, size + 2, {"text": "never said"}, False))
    report = since(world)
    assert not report.ok
    named = f"[event_log] event {size + 2}: payload does not match its digest (payload altered)"
    assert named in lines(report)


def test_a_rechained_rewrite_after_the_checkpoint_fails_the_consistency_proof(world: World) -> None:
    """The chain verifies (every later hash recomputed), but the tree was built before the
    rewrite: the re-hashed events no longer give the root the server's proof leads to."""
    size = grow(world)
    as_superuser(world.c.engine, lambda conn: rewrite(conn, size + 2, {"text": "never said"}, True))
    report = since(world)
    named = [m for m in report.mismatches if m.check == "event_log"]
    assert named and "is not proven an extension of it" in named[0].message, lines(report)


def test_an_older_row_the_sample_covers_is_named_and_one_it_leaves_is_not(world: World) -> None:
    grow(world)
    drawn = since(world, sample=1).coverage["samples"]["adapter_versions"]
    assert len(drawn) == 1 and drawn[0].startswith("adapter_id=coding@")
    adapter = drawn[0].removeprefix("adapter_id=")
    other = "coding@1" if adapter == "coding@2" else "coding@2"
    for tampered in (adapter, other):
        as_superuser(world.c.engine, sql("UPDATE adapter_versions SET hyper = '{\"r\": 64}' "
                                         "WHERE adapter_id = :a", a=tampered))
    report = since(world, sample=1)
    subjects = {m.subject for m in report.mismatches if m.check == "adapter_versions"}
    assert subjects == {f"adapter_versions adapter_id={adapter}"}, lines(report)
    full = {m.subject for m in world.c.auditor.everything().mismatches}
    assert f"adapter_versions adapter_id={other}" in full


def test_a_deleted_or_ghost_older_row_is_named_whatever_the_sample(world: World) -> None:
    grow(world)
    as_superuser(world.c.engine, sql("DELETE FROM adapter_status_changes"))
    report = since(world, sample=0)
    assert any(m.check == "adapter_status_changes" and "missing" in m.message for m in report.mismatches), \
        lines(report)


def test_a_checkpoint_whose_signature_fails_stops_the_audit(world: World) -> None:
    grow(world)
    latest = world.c.checkpoint_store.latest()
    assert latest is not None
    body, _, signature_line = latest.note.rstrip("\n").rpartition("\n")
    who, _, signature = signature_line.rpartition(" ")
    flipped = bytearray(base64.b64decode(signature))
    flipped[-1] ^= 0x01  # the signature's last byte: the key id still names the log's key
    forged = f"{body}\n{who} {base64.b64encode(bytes(flipped)).decode()}\n"
    as_superuser(world.c.engine, sql("UPDATE audit_checkpoints SET note = :n WHERE position = :p",
                                     n=forged, p=latest.position))
    report = since(world)
    assert [c.name for c in report.checks] == ["checkpoint"]
    assert report.mismatches[0].subject == f"checkpoint {latest.position} (size {latest.checkpoint.size})"
    assert "does not verify" in report.mismatches[0].message
    assert report.coverage["stopped"].startswith("the checkpoint does not verify")


def test_a_stored_tree_that_no_longer_has_the_signed_root_is_named(world: World) -> None:
    size = grow(world)
    peak = range_nodes(0, size)[0]  # the largest subtree the signed root folds
    as_superuser(world.c.engine, sql("UPDATE merkle_nodes SET hash = :h WHERE level = :l AND idx = :i",
                                     h=b"\x00" * 32, l=peak.level, i=peak.idx))
    report = since(world)
    assert any(m.check == "event_log" and "no longer have the root it signed" in m.message
               for m in report.mismatches), lines(report)
    assert report.coverage["checkpoint_size"] == size


def test_a_truncated_log_is_named(world: World) -> None:
    latest = world.c.checkpoint_store.latest()
    assert latest is not None
    size = latest.checkpoint.size
    as_superuser(world.c.engine, sql("DELETE FROM events WHERE position > :p", p=size - 2))
    report = since(world)
    assert any(m.check == "event_log" and m.message.startswith("TRUNCATED") for m in report.mismatches), \
        lines(report)
