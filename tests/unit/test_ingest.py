"""Ingest: the checks a batch passes before it reaches the store (no I/O)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest
from sqlalchemy.engine import Connection

from events.catalogue import RESERVED_STREAM_PREFIXES
from events.errors import StreamOfAnotherTenant
from events.ingest import Author, BatchRejected, ClientEvent, IngestLimits, ingest
from events.memory_store import InMemoryEventStore
from events.model import NewEvent
from events.store import Appended
from kernel.json_input import JsonLimits

LIMITS = IngestLimits(max_batch_events=3, max_payload_bytes=64)
OPERATOR = Author("key:ops")
ACME = Author("key:acme-harness", "acme")


class RecordingStore(InMemoryEventStore):
    """Remembers what it was asked to append (and stores it, in memory)."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[NewEvent]] = []

    def append(self, batch: Sequence[NewEvent], conn: Connection | None = None) -> list[Appended]:
        self.batches.append(list(batch))
        return super().append(batch, conn)


def turn(text: str = "hi", **kwargs: object) -> ClientEvent:
    return ClientEvent(stream_id="s", type="turn.user", payload={"text": text}, **kwargs)  # type: ignore[arg-type]


def test_a_valid_batch_reaches_the_store_whole_and_in_order() -> None:
    store = RecordingStore()
    event_id, cause = uuid.uuid4(), uuid.uuid4()
    when = datetime(2026, 1, 1, tzinfo=UTC)
    ingest(store, [turn("a", event_id=event_id, actor="u", occurred_at=when, causation_id=cause,
                        expected_seq=0), turn("b")], LIMITS, OPERATOR)

    [batch] = store.batches
    assert [e.payload["text"] for e in batch] == ["a", "b"]
    first = batch[0]
    assert (first.event_id, first.expected_seq) == (event_id, 0)
    assert (first.metadata.actor, first.metadata.occurred_at, first.metadata.causation_id) == (
        "key:ops", when, cause)
    assert first.metadata.claimed_actor == "u" and batch[1].metadata.claimed_actor is None
    assert isinstance(batch[1].event_id, uuid.UUID) and batch[1].event_id != event_id


@pytest.mark.parametrize(("items", "field", "status"), [
    ([], "events", 422),
    ([turn()] * 4, "events", 413),
    ([turn(), turn("x" * 100)], "events[1].payload", 413),
    ([turn(), ClientEvent(stream_id="s", type="nope", payload={})], "events[1].type", 422),
    ([ClientEvent(stream_id="s", type="turn.user", payload={})], "events[0].payload.text", 422),
    ([turn(schema_version=7)], "events[0].schema_version", 422),
    ([ClientEvent(stream_id="s", type="alias.moved", payload={})], "events[0].type", 422),
])
def test_a_bad_batch_is_refused_whole_naming_the_field(items: list[ClientEvent], field: str,
                                                       status: int) -> None:
    store = RecordingStore()
    with pytest.raises(BatchRejected) as info:
        ingest(store, items, LIMITS, OPERATOR)
    assert (info.value.field, info.value.status) == (field, status)
    assert store.batches == []  # nothing of the batch was offered to the store


def test_the_payload_limit_counts_canonical_utf8_bytes() -> None:
    store = RecordingStore()
    just_fits = "é" * ((64 - len('{"text":""}')) // 2)  # two bytes each
    ingest(store, [turn(just_fits)], LIMITS, OPERATOR)
    with pytest.raises(BatchRejected):
        ingest(store, [turn(just_fits + "é")], LIMITS, OPERATOR)


def test_the_tenant_is_stamped_from_the_key_and_an_operator_may_name_one() -> None:
    store = RecordingStore()
    ingest(store, [turn("a"), turn("b", tenant="acme")], LIMITS, ACME)
    ingest(store, [ClientEvent(stream_id="t", type="turn.user", payload={"text": "x"},
                               tenant="globex")], LIMITS, OPERATOR)
    ingest(store, [ClientEvent(stream_id="u", type="turn.user", payload={"text": "y"})],
           LIMITS, OPERATOR)

    tenants = [e.metadata.tenant for batch in store.batches for e in batch]
    assert tenants == ["acme", "acme", "globex", None]
    assert {e.metadata.actor for e in store.batches[0]} == {"key:acme-harness"}


def test_a_tenant_key_may_not_name_another_tenant() -> None:
    store = RecordingStore()
    with pytest.raises(BatchRejected) as info:
        ingest(store, [turn("a"), turn("b", tenant="globex")], LIMITS, ACME)
    assert (info.value.field, info.value.status) == ("events[1].metadata.tenant", 403)
    assert store.batches == []


@pytest.mark.parametrize("stream", ["contract:default", "specialist:coding", "training_run:r1",
                                    "base_model:tiny", "api_key:abc", "Contract:default"])
def test_server_streams_refuse_client_events_of_any_type(stream: str) -> None:
    store = RecordingStore()
    items = [turn(), ClientEvent(stream_id=stream, type="x.note", payload={})]
    with pytest.raises(BatchRejected) as info:
        ingest(store, items, LIMITS, OPERATOR)
    assert (info.value.field, info.value.status) == ("events[1].stream_id", 422)
    assert store.batches == []


def test_every_stream_the_server_writes_is_reserved() -> None:
    from access.keys import key_stream
    from contract.versions import contract_stream
    from harness.routing.events import stream_of as router_stream
    from trainer.journal import run_stream, specialist_stream

    for stream in (contract_stream("c"), specialist_stream("s"), run_stream("r"), key_stream("k"),
                   "base_model:tiny", router_stream("c")):
        assert stream.startswith(RESERVED_STREAM_PREFIXES), stream


def test_a_stream_belongs_to_the_tenant_of_its_events() -> None:
    store = RecordingStore()
    ingest(store, [turn("a")], LIMITS, ACME)
    with pytest.raises(StreamOfAnotherTenant) as info:
        ingest(store, [ClientEvent(stream_id="q", type="turn.user", payload={"text": "q"}),
                       turn("b")], LIMITS, Author("key:globex", "globex"))
    assert info.value.field == "events[1].stream_id"
    with pytest.raises(StreamOfAnotherTenant):  # an operator must name the stream's tenant
        ingest(store, [turn("c")], LIMITS, OPERATOR)
    ingest(store, [turn("d", tenant="acme")], LIMITS, OPERATOR)
    assert [e.payload["text"] for e in store.events] == ["a", "d"]


@pytest.mark.parametrize(("payload", "field"), [
    ({"text": "hi", "deep": {"a": {"a": {"a": {}}}}}, "events[1].payload.deep.a.a"),
    ({"text": "hi", "n": float("nan")}, "events[1].payload.n"),
    ({"text": "hi\ud800"}, "events[1].payload.text"),
    ({"text": "x" * 11}, "events[1].payload.text"),
])
def test_payloads_beyond_the_json_limits_are_refused_by_field(payload: dict, field: str) -> None:
    store = RecordingStore()
    limits = IngestLimits(3, 1000, JsonLimits(max_depth=3, max_object_keys=5, max_string_chars=10))
    with pytest.raises(BatchRejected) as caught:
        ingest(store, [turn(), ClientEvent(stream_id="s", type="turn.user", payload=payload)], limits,
               OPERATOR)

    assert (caught.value.field, caught.value.status) == (field, 422)
    assert store.batches == []


class Registry:
    """A fake reference check: knows chat, coding, coding@1 and default@1; counts questions."""

    known = {("specialist", "chat"), ("specialist", "coding"), ("adapter", "coding@1"),
             ("contract", "default@1")}

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def __call__(self, kind: str, value: str) -> str | None:
        self.asked.append((kind, value))
        return None if (kind, value) in self.known else f"no {kind} '{value}'"


def routed(adapter: str, specialist: str = "coding", **kwargs: object) -> ClientEvent:
    payload = {"specialist": specialist, "adapter_version": adapter, **kwargs}
    return ClientEvent(stream_id="s", type="route.decided", payload=payload)


def test_serving_records_naming_unknown_registry_objects_are_refused() -> None:
    store, check = RecordingStore(), Registry()
    with pytest.raises(BatchRejected) as caught:
        ingest(store, [routed("coding@1"), routed("coding@99")], LIMITS, OPERATOR, check)
    assert caught.value.field == "events[1].payload.adapter_version"
    assert "no adapter 'coding@99'" in caught.value.message and "ahead_of_registry" in caught.value.message
    with pytest.raises(BatchRejected) as meta:
        ingest(store, [turn(contract="default@7")], LIMITS, OPERATOR, check)
    assert meta.value.field == "events[0].metadata.contract"
    with pytest.raises(BatchRejected, match="not a version of specialist 'chat'") as paired:
        ingest(store, [routed("coding@1", specialist="chat")], LIMITS, OPERATOR, check)
    assert paired.value.field == "events[0].payload.adapter_version"
    assert store.batches == []


def test_known_names_the_escape_and_custom_types_pass_and_each_name_is_asked_once() -> None:
    store, check = RecordingStore(), Registry()
    ingest(store, [routed("coding@1"), routed("coding@1"), turn(specialist="coding")], LIMITS,
           OPERATOR, check)
    assert sorted(check.asked) == [("adapter", "coding@1"), ("specialist", "coding")]
    ahead = routed("coding@99", ahead_of_registry=True)
    custom = ClientEvent(stream_id="s", type="x.route", payload={}, adapter_version="coding@99")
    ingest(store, [ahead, custom], IngestLimits(3, 1024), OPERATOR, check)
    assert len(store.batches) == 2
    ingest(store, [routed("coding@99")], LIMITS, OPERATOR)  # no check given: nothing is looked up
