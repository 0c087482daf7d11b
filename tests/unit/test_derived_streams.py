"""Which streams only the server may open: derived ids are recognised in every spelling a
UUID has, and nothing a client makes its sessions with is taken for one."""

from __future__ import annotations

import random
import uuid

import pytest

from events.derived import derived_id, derived_stream, is_derived_id

NS = uuid.UUID("1f0c6b9e-3c1a-5d0e-9a57-6b8d2f4e7c11")


def test_a_derived_id_is_stable_distinct_and_a_valid_version_8_uuid() -> None:
    a, b = derived_id(NS, "acme\0alice"), derived_id(NS, "acme\0bob")
    assert a == derived_id(NS, "acme\0alice") and a != b
    assert a.version == 8 and a.variant == uuid.RFC_4122
    assert derived_id(NS, "acme\0alice") != derived_id(NS, "acmf\0alice")


@pytest.mark.parametrize("spell", [str, lambda u: str(u).upper(), lambda u: u.hex,
                                   lambda u: "{" + str(u) + "}", lambda u: u.urn])
def test_every_spelling_of_a_derived_session_is_the_servers(spell) -> None:
    found = derived_id(NS, "acme\0alice")
    assert derived_stream(f"session-{spell(found)}") and derived_stream(f"SESSION-{spell(found)}")


@pytest.mark.parametrize("stream", ["otel:acme:c1", "OTel:acme:c1", "otel:", "OTEL:x"])
def test_every_otlp_conversation_is_the_servers(stream: str) -> None:
    assert derived_stream(stream)


def test_what_clients_name_their_sessions_with_is_theirs() -> None:
    rng = random.Random(0)
    ids = [uuid.uuid4() for _ in range(200)] + [uuid.uuid5(uuid.NAMESPACE_URL, str(n)) for n in range(200)]
    ids += [uuid.UUID(int=rng.getrandbits(128)) for _ in range(2000)]
    assert not any(derived_stream(f"session-{u}") or is_derived_id(str(u)) for u in ids)
    for stream in ("session-a", "harness-otel:x", "session-", "sessions-" + str(derived_id(NS, "x"))):
        assert not derived_stream(stream)
