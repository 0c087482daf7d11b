import random
import string
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

from events.chain import (
    GENESIS_HASH,
    chain_hash,
    hash_template,
    payload_digest,
    reference_chain_hash,
    verify_chain,
)
from events.model import EventMetadata, RecordedEvent


def _chain(n: int) -> list[RecordedEvent]:
    out, prev = [], GENESIS_HASH
    for i in range(1, n + 1):
        payload = {"text": f"turn {i}"}
        e = RecordedEvent(uuid.uuid4(), "s", i, i, "turn.user", 1, payload,
                          EventMetadata(actor="a"), datetime(2026, 1, 1, tzinfo=UTC),
                          payload_digest(payload), prev, "")
        e = replace(e, hash=chain_hash(prev, e))
        out.append(e)
        prev = e.hash
    return out


def test_intact_chain_verifies():
    report = verify_chain(_chain(5))
    assert report.intact and report.checked == 5 and report.last_position == 5


def test_changed_payload_is_found_at_its_position():
    events = _chain(5)
    events[2] = replace(events[2], payload={"text": "forged"})
    report = verify_chain(events)
    assert report.first_break.position == 3 and "payload" in report.first_break.reason


def test_changed_metadata_is_found():
    events = _chain(5)
    events[3] = replace(events[3], metadata=EventMetadata(actor="mallory"))
    assert verify_chain(events).first_break.position == 4


def test_deleted_row_is_found():
    events = _chain(5)
    del events[1]
    report = verify_chain(events)
    assert report.first_break.position == 3 and report.last_position == 1


def test_reordered_rows_are_found():
    events = _chain(5)
    a, b = events[1], events[2]
    # swap their contents but keep positions (what an attacker would do to reorder)
    events[1] = replace(b, position=2, stream_seq=2)
    events[2] = replace(a, position=3, stream_seq=3)
    assert verify_chain(events).first_break.position == 2


def test_digest_ignores_key_order():
    assert payload_digest({"a": 1, "b": [1, 2]}) == payload_digest({"b": [1, 2], "a": 1})


def test_claimed_actor_is_chained_only_where_it_is_set():
    from events.chain import chained_fields
    from events.model import metadata_json

    old = _chain(1)[0]  # written before the field existed: its hash must not change
    assert "claimed_actor" not in chained_fields(old)
    assert "claimed_actor" not in metadata_json(old.metadata, old.recorded_at)
    assert verify_chain([old]).intact

    claimed = replace(old, metadata=EventMetadata(actor="key:bot", claimed_actor="alice"))
    claimed = replace(claimed, hash=chain_hash(GENESIS_HASH, claimed))
    assert chained_fields(claimed)["claimed_actor"] == "alice"
    assert claimed.to_json()["metadata"]["claimed_actor"] == "alice"
    assert verify_chain([claimed]).intact
    forged = replace(claimed, metadata=EventMetadata(actor="key:bot", claimed_actor="bob"))
    assert "metadata altered" in verify_chain([forged]).first_break.reason


def _random_event(rnd: "random.Random", index: int) -> RecordedEvent:
    def text() -> str | None:
        return rnd.choice([None, "", "a", 'é\u2028"\\\n\x01\x7f', "🙂 x", "".join(
            rnd.choice(string.printable) for _ in range(rnd.randint(0, 30)))])

    when = rnd.choice([None, datetime(2025, 5, 5, 1, 2, 3),  # naive: taken as UTC
                       datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=2)))
                       + timedelta(microseconds=rnd.randint(0, 10**9))])
    meta = EventMetadata(occurred_at=when, actor=text(), tenant=text(), specialist=text(),
                         adapter_version=text(), contract=text(), claimed_actor=text(),
                         causation_id=rnd.choice([None, uuid.uuid4()]),
                         correlation_id=rnd.choice([None, uuid.uuid4()]))
    return RecordedEvent(uuid.uuid4(), text() or "s", rnd.randint(1, 10**12), rnd.randint(1, 10**12),
                         text() or "t", rnd.randint(1, 5), {"i": index}, meta,
                         datetime.now(UTC), payload_digest({"i": index}), "ab" * 32, "")


def test_the_fast_chain_hash_is_the_definition_byte_for_byte():
    # The template (events.chain.HashTemplate) must hash exactly what the definition
    # hashes, or logs written before it would stop verifying.
    rnd = random.Random(7)
    for index in range(5000):
        event = _random_event(rnd, index)
        assert chain_hash("ab" * 32, event) == reference_chain_hash("ab" * 32, event), event


def test_unusual_field_types_fall_back_to_the_definition():
    event = replace(_chain(1)[0], stream_id=7, metadata=EventMetadata(actor=3, causation_id="c"))
    assert hash_template(event.event_id, event.stream_id, event.type, event.schema_version,
                         event.metadata, event.payload_digest) is None
    assert chain_hash(GENESIS_HASH, event) == reference_chain_hash(GENESIS_HASH, event)


def test_numbering_hashes_by_the_definition():
    from events.model import NewEvent
    from events.numbering import number_batch

    rnd = random.Random(3)
    batch = [NewEvent(e.stream_id, e.type, {"i": i, "t": "é"}, metadata=e.metadata)
             for i, e in enumerate(_random_event(rnd, i) for i in range(200))]
    results = number_batch(batch, {}, 0, GENESIS_HASH, {}, datetime.now(UTC))
    assert verify_chain(a.event for a in results).intact
    assert all(reference_chain_hash(a.event.prev_hash, a.event) == a.event.hash for a in results)
