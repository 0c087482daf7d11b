"""Projections without a database: the replay of typed events, the comparison with live
rows (what differs, what is missing, ghosts), bounds of old events, and the log's own
consistency checks (serving and alias chains)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from access.key_log import KEY_PROJECTIONS, ApiKeyCreated
from audit.checks import contracts, registry
from audit.report import Findings
from contract.events import DraftCreated, DraftEdited, Published, ServingMoved
from contract.projections import CONTRACT_PROJECTIONS, CONTRACT_VERSIONS
from events.memory_store import InMemoryEventStore
from events.model import EventMetadata, NewEvent, RecordedEvent
from events.projections.compare import check_table, row_differences
from events.projections.model import Near, ProjectionSet, Unrecorded
from events.projections.replay import replay
from events.server_events import SERVER_TYPES, ServerEvent, logged
from trainer.registry.events import AliasMoved
from trainer.runs.events import (
    TrainingFailed,
    TrainingQueued,
    TrainingRequeued,
    TrainingStarted,
    TrainingSucceeded,
)
from trainer.runs.projections import RUN_PROJECTIONS, TRAINING_RUNS


def log_of(*entries: tuple[str, ServerEvent | NewEvent, str]) -> list[RecordedEvent]:
    """Events as a store records them; a ``NewEvent`` is written as given (an old version)."""
    store = InMemoryEventStore()
    out = []
    for stream, event, actor in entries:
        new = event if isinstance(event, NewEvent) else event.new_event(stream, EventMetadata(actor=actor))
        out.append(store.append([new])[0].event)
    return out


def contract_log(published_hash: str = "h2") -> list[RecordedEvent]:
    return log_of(
        ("contract:c", DraftCreated(name="c", version=1, parent_version=None, content_hash="h1",
                                    document="a"), "ann"),
        ("contract:c", DraftEdited(name="c", version=1, content_hash="h2", document="b"), "ann"),
        ("contract:c", Published(name="c", version=1, content_hash=published_hash, check=None,
                                 forced=None), "bob"))


def test_a_contract_version_is_its_events_replayed() -> None:
    events = contract_log()
    replayed = replay(CONTRACT_PROJECTIONS, events)
    row = replayed.rows["contract_versions"][("c", 1)]
    assert (row["status"], row["document"], row["content_hash"], row["created_by"], row["published_by"]) == (
        "published", "b", "h2", "ann", "bob")
    assert row["published_at"] == events[2].recorded_at and row["last_event_position"] == 3
    assert replayed.origins["contract_versions"][("c", 1)].position == 3


def test_live_rows_that_differ_are_missing_or_ghosts_are_named_by_key() -> None:
    replayed = replay(CONTRACT_PROJECTIONS, contract_log())
    row = dict(replayed.rows["contract_versions"][("c", 1)])
    live = {("c", 1): {**row, "document": "forged"}, ("c", 2): {**row, "version": 2}}
    found = check_table(CONTRACT_VERSIONS, replayed, live)
    assert [(d.row, d.kind) for d in found.differences] == [("name=c, version=1", "differs"),
                                                            ("name=c, version=2", "extra")]
    assert "document is 'forged' in the table but 'b' by contract.published at position 3" in \
        found.differences[0].detail
    missing = check_table(CONTRACT_VERSIONS, replayed, {})
    assert [(d.row, d.kind, d.position) for d in missing.differences] == [("name=c, version=1", "missing", 3)]
    assert check_table(CONTRACT_VERSIONS, replayed, None).differences[0].kind == "table missing"


def test_an_event_that_contradicts_the_log_cannot_be_projected() -> None:
    replayed = replay(CONTRACT_PROJECTIONS, contract_log(published_hash="other"))
    [problem] = replayed.problems
    assert problem.position == 3 and "ended at h2" in problem.message
    [unprojectable] = check_table(CONTRACT_VERSIONS, replayed, {}).differences[:1]
    assert (unprojectable.kind, unprojectable.row) == ("unprojectable", "event 3")


def test_a_run_is_replayed_through_failure_retry_and_success() -> None:
    queued = TrainingQueued(run_id="r", parent_adapter_id=None, base_model="tiny", manifest_id="m",
                            firing_id="f", hyper={"steps": 2}, reason="x", gate={"margin": 0.0},
                            total_steps=2)
    events = log_of(
        ("training_run:r", queued, "sys"),
        ("training_run:r", TrainingStarted(run_id="r", attempt=1, worker="w1", taken_over_from=None), "w1"),
        ("training_run:r", TrainingFailed(run_id="r", attempt=1, error="oom"), "w1"),
        ("training_run:r", TrainingRequeued(run_id="r", reason="again", previous_error="oom"), "ann"),
        ("training_run:r", TrainingStarted(run_id="r", attempt=1, worker="w2", taken_over_from=None), "w2"),
        ("training_run:r", TrainingSucceeded(run_id="r", attempt=1, adapter_id="s@1", status="promoted",
                                             artifact_sha256="a", gate_reason="ok", examples=None,
                                             examples_sha256=None), "w2"))
    row = replay(RUN_PROJECTIONS, events).rows["training_runs"][("r",)]
    assert (row["status"], row["attempts"], row["adapter_id"], row["error"], row["gate_outcome"],
            row["lease_owner"], row["created_by"]) == ("succeeded", 1, "s@1", None, "promoted", "w2", "sys")
    assert row["started_at"] == events[4].recorded_at and row["finished_at"] == events[5].recorded_at


def test_working_columns_are_not_compared() -> None:
    queued = TrainingQueued(run_id="r", parent_adapter_id=None, base_model="tiny", manifest_id="m",
                            firing_id="f", hyper={}, reason="x", gate={}, total_steps=1)
    replayed = replay(RUN_PROJECTIONS, log_of(("training_run:r", queued, "sys")))
    want = replayed.rows["training_runs"][("r",)]
    origin = replayed.origins["training_runs"][("r",)]
    assert row_differences(TRAINING_RUNS, {**want, "step": 7, "last_loss": 0.5}, want, origin) == ""
    running = {**want, "status": "running"}
    assert "status is 'running'" in row_differences(TRAINING_RUNS, running, want, origin)


def test_an_old_event_is_upcast_and_only_bounds_what_it_did_not_record() -> None:
    old = NewEvent("training_run:r", "training.queued", {
        "run_id": "r", "parent_adapter_id": None, "base_model": "tiny", "manifest_id": "m",
        "firing_id": "f", "hyper": {}, "reason": "x"}, schema_version=1, metadata=EventMetadata(actor="sys"))
    [event] = log_of(("training_run:r", old, "sys"))
    assert logged(event).stored_version == 1 and logged(event).event.gate is None
    replayed = replay(RUN_PROJECTIONS, [event])
    want = replayed.rows["training_runs"][("r",)]
    assert isinstance(want["gate"], Unrecorded) and isinstance(want["created_at"], Near)
    origin = replayed.origins["training_runs"][("r",)]
    close = {**want, "gate": {"margin": 1}, "total_steps": 3,
             "created_at": event.recorded_at - timedelta(seconds=1)}
    assert row_differences(TRAINING_RUNS, close, want, origin) == ""
    far = {**close, "created_at": datetime(2000, 1, 1, tzinfo=UTC)}
    assert "created_at is 2000-01-01T00:00:00+00:00 in the table, outside" in \
        row_differences(TRAINING_RUNS, far, want, origin)


def test_a_key_created_before_version_2_has_no_recorded_secret_hash() -> None:
    old = NewEvent("api_key:k", "api_key.created", {"key_id": "k", "scopes": ["admin"], "label": None,
                                                     "tenant": None, "expires_at": None},
                   metadata=EventMetadata(actor="cli"))
    row = replay(KEY_PROJECTIONS, log_of(("api_key:k", old, "cli"))).rows["api_keys"][("k",)]
    assert isinstance(row["secret_sha256"], Unrecorded) and row["scopes"] == ["admin"]
    new = ApiKeyCreated(key_id="k", scopes=["admin"], label=None, tenant=None, expires_at=None,
                        secret_sha256="s" * 64)
    assert replay(KEY_PROJECTIONS, log_of(("api_key:k", new, "cli"))).rows["api_keys"][("k",)][
        "secret_sha256"] == "s" * 64


def test_a_set_refuses_an_event_type_it_does_not_project() -> None:
    with pytest.raises(LookupError):
        ProjectionSet(CONTRACT_VERSIONS).for_event(ServingMoved)
    assert TRAINING_RUNS in RUN_PROJECTIONS.for_event(TrainingStarted)


def test_every_server_type_names_its_type_once_and_can_be_upcast() -> None:
    for name, cls in SERVER_TYPES.items():
        assert name == cls.TYPE and set(cls.UPCASTERS) == set(range(1, cls.VERSION))


def test_serving_and_alias_moves_must_each_follow_the_one_before() -> None:
    def serving(version: int | None, previous: int | None) -> tuple[str, ServerEvent, str]:
        return ("contract:c", ServingMoved(name="c", specialist="coding", version=version,
                                           previous_version=previous, reason="r"), "ann")

    f = Findings("serving_chain", "events", "events")
    contracts.check_serving_chain(f, log_of(serving(1, None), serving(3, 2), serving(None, 3)))
    assert [m.subject for m in f.mismatches] == ["serving move at position 2"]
    assert "replaced version 2" in f.mismatches[0].message and "served 1" in f.mismatches[0].message

    def moved(adapter: str, previous: str | None) -> tuple[str, ServerEvent, str]:
        return ("specialist:s", AliasMoved(specialist="s", alias="prod", adapter_id=adapter,
                                           previous_adapter_id=previous, reason="r"), "ann")

    f = Findings("alias_chain", "events", "events")
    registry.check_alias_chain(f, log_of(moved("s@1", None), moved("s@2", "s@9")))
    assert [m.subject for m in f.mismatches] == ["alias move at position 2"]
    assert "replaced 's@9'" in f.mismatches[0].message
